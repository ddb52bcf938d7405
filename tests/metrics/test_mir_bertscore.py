"""Captioning BERTScore (MusicCaps, SDD) in both modes, against bert-score itself on real outputs."""
import json
from pathlib import Path

import numpy as np
import pytest

from musiceval.data.cmibench import OutputRecord, load_outputs
from musiceval.protocols.mir.metrics.tasks import score_task
from musiceval.data.errors import InputError
from musiceval.protocols.mir.engine import bertscore_choice, load_bertscorer, score_file

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "mir" / "outputs"
N = 12  # records per file: enough for real variety, cheap on 2 cores


@pytest.fixture(scope="module")
def minilm_scorer():
    pytest.importorskip("bert_score")
    scorer, reason = load_bertscorer("minilm", 6)
    assert reason is None, reason
    return scorer


def _records(model, task):
    return list(load_outputs(FIX / model / f"{model}_{task}.jsonl").records[:N])


@pytest.mark.parametrize("model,task", [("ltu", "MusicCaps"), ("mullama", "SDD")])
def test_default_mode_equals_bert_score_on_real_captions(minilm_scorer, model, task):
    recs = _records(model, task)
    res = score_task(task, recs, bertscorer=minilm_scorer)
    # bert-score's own call on the same pairs (the scorer is BERTScorer(model_type=<MiniLM dir>, num_layers=6))
    raw = minilm_scorer.scorer  # load_bertscorer wraps it in the token cache (TokenCachedBERTScorer)
    assert raw.num_layers == 6 and not raw.rescale_with_baseline and not raw.idf
    p, r, f = raw.score([x.response for x in recs], [x.correct_answer for x in recs])
    for key, expected in (("bertscore_precision", p), ("bertscore_recall", r), ("bertscore_f1", f)):
        np.testing.assert_allclose(res.per_item[key].values, expected.numpy(), rtol=1e-5, atol=1e-6)
        assert res.metrics[key] == pytest.approx(float(expected.mean()), abs=1e-6)
    assert not any(n.startswith("BERTScore not computed") for n in res.notes)


def test_compat_mode_is_the_toolkits_multi_reference_recall(minilm_scorer):
    recs = _records("mullama", "MusicCaps")
    res = score_task("MusicCaps", recs, compat="cmi-bench", bertscorer=minilm_scorer)
    assert [k for k in res.metrics if k.startswith("bertscore")] == ["bertscore_recall"]
    # evaluate.py: score(candidates, [[ref] for each item], lang="en") and the mean of R; one
    # reference per item, so bert-score's best-of-references rule gives the single-reference R
    _, r, _ = minilm_scorer.score([x.response for x in recs], [[x.correct_answer] for x in recs])
    assert res.metrics["bertscore_recall"] == pytest.approx(float(r.mean()), abs=1e-6)


def test_without_a_scorer_the_keys_are_absent_and_a_note_says_why():
    rec = OutputRecord("0|a", 0, "q", "calm piano", "a calm piano piece", "data/a", "a")
    res = score_task("SDD", [rec])
    assert not [k for k in res.metrics if k.startswith("bertscore")]
    assert any("BERTScore not computed" in n for n in res.notes)


def test_an_empty_caption_scores_zero_and_is_not_embedded(minilm_scorer):
    recs = [OutputRecord("0|a", 0, "q", "", "a calm piano piece", "data/a", "a"),
            OutputRecord("1|b", 1, "q", "a calm piano piece", "a calm piano piece", "data/b", "b")]
    res = score_task("SDD", recs, bertscorer=minilm_scorer)
    assert res.per_item["bertscore_f1"].values[0] == 0.0
    assert res.per_item["bertscore_f1"].values[1] == pytest.approx(1.0, abs=1e-4)


def test_model_choice_per_mode_never_swaps_silently():
    assert bertscore_choice(None, None, None) == ("minilm", 6)
    assert bertscore_choice(None, None, "cmi-bench") == ("roberta-large", 17)
    assert bertscore_choice("/models/roberta-large", None, "cmi-bench") == ("/models/roberta-large", 17)
    assert bertscore_choice("roberta-base", None, None) == ("roberta-base", 10)  # bert-score's table
    with pytest.raises(InputError, match="--bertscore-layers"):
        bertscore_choice("/some/dir", None, None)
    with pytest.raises(InputError, match=">= 1"):
        bertscore_choice("minilm", 0, None)


def test_an_unavailable_model_is_a_note_naming_the_fix_or_an_error_under_strict(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    scorer, reason = load_bertscorer("no-such-org/no-such-model", 17)  # a hub id not in the local cache
    assert scorer is None and "huggingface-cli download no-such-org/no-such-model" in reason
    assert "--bertscore-model none" in reason
    scorer, reason = load_bertscorer(str(tmp_path / "no-such-model"), 17)  # a path: no hub download helps
    assert scorer is None and "there is no directory" in reason and "huggingface-cli" not in reason
    target = tmp_path / "ltu_SDD.jsonl"
    target.write_text(json.dumps(json.loads((FIX / "ltu" / "ltu_SDD.jsonl").read_text())[:3]))
    result, _ = score_file(target, compat="cmi-bench", bertscore_model=str(tmp_path / "missing"))
    assert "bertscore_recall" not in result.metrics and "bleu" in result.metrics
    assert result.models["bertscore"]["error"] and result.models["bertscore"]["model"].endswith("missing")
    assert sum("BERTScore not computed" in n for n in result.notes) == 1
    with pytest.raises(InputError, match="there is no directory"):
        score_file(target, compat="cmi-bench", bertscore_model=str(tmp_path / "missing"), strict=True)


def test_a_model_directory_without_weights_is_a_reason_and_the_other_metrics_are_reported(tmp_path):
    """config.json alone: the scorer is not built lazily, so the error comes before scoring, as a
    reason naming the fix, and not at the first cache miss in the middle of the task."""
    import shutil

    from musiceval.encoders.sentence import bundled_minilm_path

    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copy(f"{bundled_minilm_path()}/config.json", partial / "config.json")
    target = tmp_path / "ltu_SDD.jsonl"
    target.write_text(json.dumps(json.loads((FIX / "ltu" / "ltu_SDD.jsonl").read_text())[:3]))
    result, _ = score_file(target, bertscore_model=str(partial), bertscore_layers=6, cache_dir=tmp_path / "cache")
    assert "bertscore_f1" not in result.metrics and "meteor" in result.metrics
    assert "copy the complete model" in result.models["bertscore"]["error"]
    with pytest.raises(InputError, match="copy the complete model"):
        score_file(target, bertscore_model=str(partial), bertscore_layers=6, cache_dir=tmp_path / "cache", strict=True)


def test_score_file_names_the_model_it_used(tmp_path, minilm_scorer):
    target = tmp_path / "mullama_MusicCaps.jsonl"
    target.write_text(json.dumps(json.loads((FIX / "mullama" / "mullama_MusicCaps.jsonl").read_text())[:3]))
    result, _ = score_file(target)
    assert result.models["bertscore"] == {"model": "minilm", "layers": 6, "rescaled": False, "error": None}
    assert {"bertscore_precision", "bertscore_recall", "bertscore_f1"} <= set(result.metrics)


def test_bertscore_model_none_skips_it_with_a_note(tmp_path):
    target = tmp_path / "ltu_SDD.jsonl"
    target.write_text(json.dumps(json.loads((FIX / "ltu" / "ltu_SDD.jsonl").read_text())[:2]))
    result, _ = score_file(target, bertscore_model="none", strict=True)  # an explicit choice, not an error
    assert not [k for k in result.metrics if k.startswith("bertscore")]
    assert result.models["bertscore"]["model"] == "none"
    assert result.notes == ["BERTScore not computed: --bertscore-model none"]


def test_hostile_captions_get_finite_scores(minilm_scorer):
    """A looping 300 kB caption is truncated by the tokenizer, not an error; odd scripts score."""
    hostile = ["go " * 100_000, "🎸🎸 ♪ 音楽 — ¿música? \x00\t", "a" * 5000]
    recs = [OutputRecord(f"{i}|h{i}", i, "q", text, "An upbeat rock song with electric guitar.", f"data/h{i}", f"h{i}")
            for i, text in enumerate(hostile)]
    res = score_task("MusicCaps", recs, bertscorer=minilm_scorer)
    for key in ("bertscore_precision", "bertscore_recall", "bertscore_f1"):
        values = res.per_item[key].values
        assert values.shape == (3,) and np.all(np.isfinite(values)) and np.all(values <= 1.0 + 1e-6)


def test_a_missing_bert_score_package_is_a_reason_naming_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "bert_score", None)  # import bert_score now raises ImportError
    scorer, reason = load_bertscorer("minilm", 6)
    assert scorer is None and "musiceval[bertscore" in reason and "--bertscore-model none" in reason
