"""LexicalScoreCache: a stored call gives exactly a fresh computation's scores, under a key that names
the code and the exact texts; torn or foreign entries are refused; concurrent writers are safe."""
from __future__ import annotations

import multiprocessing
from pathlib import Path

import numpy as np
import pytest

from musiceval.data.musicqa import load_dasheng_musicqa
from musiceval.metrics import lexical_cache, lexical_corpus
from musiceval.metrics.lexical import LEXICAL_METRICS
from musiceval.metrics.lexical_cache import LexicalScoreCache, call_key, implementation_version
from musiceval.metrics.lexical_corpus import lexical_scores

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl"


@pytest.fixture(scope="module")
def pairs():
    data = load_dasheng_musicqa(FIXTURE)
    refs = {it.id: it.reference for it in data.items}
    cands = [r.text for r in data.responses][:120]
    references = [refs[r.item_id] for r in data.responses][:120]
    # some items with two references, and a CIDEr-D corpus larger than the scored references
    references = [[ref, cands[(k + 7) % len(cands)]] if k % 5 == 0 else ref for k, ref in enumerate(references)]
    return cands, references, [refs[r.item_id] for r in data.responses]


def _no_scoring(*args, **kwargs):
    raise AssertionError("a stored call was scored again")


@pytest.mark.parametrize("metrics", [LEXICAL_METRICS, ("meteor",), ("cider", "bleu")])
def test_a_stored_call_equals_a_fresh_computation_bit_for_bit(pairs, tmp_path, monkeypatch, metrics):
    cands, refs, df = pairs
    fresh = lexical_scores(cands, refs, metrics, df_references=df)
    store = LexicalScoreCache(tmp_path)
    first = lexical_scores(cands, refs, metrics, df_references=df, store=store)
    assert (store.hits, store.misses) == (0, 1) and len(list(store.root.glob("*.npz"))) == 1
    monkeypatch.setattr(lexical_corpus, "LexicalCorpus", _no_scoring)
    again = lexical_scores(cands, refs, metrics, df_references=df, store=LexicalScoreCache(tmp_path))
    for got in (first, again):
        assert list(got) == list(fresh) == list(metrics)
        for m in metrics:
            assert got[m].dtype == fresh[m].dtype == np.float64 and got[m].shape == (len(cands),)
            assert got[m].tobytes() == fresh[m].tobytes()


def test_the_key_names_the_code_the_metrics_and_every_text(pairs, monkeypatch):
    cands, refs, df = pairs
    base = call_key(cands, refs, LEXICAL_METRICS, df, False)
    assert base == call_key(list(cands), list(refs), list(LEXICAL_METRICS), list(df), False)
    others = [
        call_key(cands[:-1] + [cands[-1] + " "], refs, LEXICAL_METRICS, df, False),  # one candidate, one space
        call_key(cands, refs[:3] + [[refs[3]]] + refs[4:], LEXICAL_METRICS, df, False),  # a list of one reference
        call_key(cands, refs, LEXICAL_METRICS[::-1], df, False),
        call_key(cands, refs, ("bleu",), df, False),
        call_key(cands, refs, LEXICAL_METRICS, None, False),
        call_key(cands, refs, LEXICAL_METRICS, df[:-1], False),
        call_key(cands, refs, LEXICAL_METRICS, df, True),
    ]
    assert len({base, *others}) == len(others) + 1
    monkeypatch.setattr(lexical_cache, "implementation_version", lambda: "other code")
    assert call_key(cands, refs, LEXICAL_METRICS, df, False) != base


def test_the_implementation_version_reads_the_code_of_every_scoring_module(monkeypatch, tmp_path):
    import importlib.util

    version = implementation_version()
    assert len(version) == 64
    implementation_version.cache_clear()
    real = importlib.util.find_spec
    meteor_copy = tmp_path / "meteor.py"
    meteor_copy.write_bytes(Path(real("musiceval.metrics.meteor").origin).read_bytes() + b"\n# changed\n")

    class Spec:
        origin = str(meteor_copy)

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: Spec() if name == "musiceval.metrics.meteor" else real(name, *a))
    try:
        assert implementation_version() != version
    finally:
        implementation_version.cache_clear()


@pytest.mark.parametrize("damage", ["truncated", "empty", "another call's", "wrong length"])
def test_a_torn_or_foreign_entry_is_refused_recomputed_and_rewritten(pairs, tmp_path, damage):
    cands, refs, df = pairs
    store = LexicalScoreCache(tmp_path)
    fresh = lexical_scores(cands, refs, ["bleu", "cider"], df_references=df, store=store)
    key = call_key(cands, refs, ["bleu", "cider"], df, False)
    entry = store.path(key)
    good = entry.read_bytes()
    if damage == "truncated":
        entry.write_bytes(good[: len(good) // 2])
    elif damage == "empty":
        entry.write_bytes(b"")
    elif damage == "another call's":
        lexical_scores(cands[1:], refs[1:], ["bleu", "cider"], df_references=df, store=store)
        entry.write_bytes(store.path(call_key(cands[1:], refs[1:], ["bleu", "cider"], df, False)).read_bytes())
    else:
        np.savez(entry, key=np.array(key), metric_bleu=fresh["bleu"][:-1], metric_cider=fresh["cider"][:-1])
    with pytest.warns(UserWarning, match=rf"lexical score cache .*{key[:16]}.*unreadable.*computed again"):
        again = lexical_scores(cands, refs, ["bleu", "cider"], df_references=df, store=LexicalScoreCache(tmp_path))
    assert all(again[m].tobytes() == fresh[m].tobytes() for m in fresh)
    assert entry.read_bytes() == good  # rewritten whole
    assert not list(store.root.glob("*.tmp")) and not list(store.root.glob(".*.tmp"))


def test_an_unwritable_folder_only_means_nothing_is_kept(pairs, tmp_path):
    import warnings

    cands, refs, df = pairs
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    store = LexicalScoreCache(blocker)  # <file>/lexical-scores cannot be made
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = lexical_scores(cands[:10], refs[:10], ["rouge_l"], df_references=df, store=store)
    assert got["rouge_l"].tobytes() == lexical_scores(cands[:10], refs[:10], ["rouge_l"], df_references=df)["rouge_l"].tobytes()


def _score_in_worker(args):
    folder, cands, refs, df, rounds = args
    out = []
    for _ in range(rounds):
        scores = lexical_scores(cands, refs, ["bleu", "rouge_l", "cider"], df_references=df, store=LexicalScoreCache(folder))
        out.append({m: v.tobytes() for m, v in scores.items()})
    return out


def test_workers_writing_and_reading_one_entry_at_once_all_get_the_same_scores(pairs, tmp_path):
    """pytest-xdist workers share the folder: each entry is renamed into place whole, so a reader
    sees no entry or a whole one, never part of one."""
    import warnings

    cands, refs, df = pairs
    expected = {m: v.tobytes() for m, v in lexical_scores(cands, refs, ["bleu", "rouge_l", "cider"], df_references=df).items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a torn read would warn
        with multiprocessing.get_context("fork").Pool(4) as pool:
            results = pool.map(_score_in_worker, [(tmp_path, cands, refs, df, 5)] * 8)
    assert all(r == expected for worker in results for r in worker)
    assert len(list((tmp_path / LexicalScoreCache.DIRNAME).iterdir())) == 1  # one entry, no temporary file left
