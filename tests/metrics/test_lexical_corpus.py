"""Corpus-level lexical scoring (LexicalCorpus, TokenCache) equals the per-pair definitions, which
equal nltk / rouge-score / pycocoevalcap (tests/metrics/test_lexical.py); here also directly
against the references on real MusicQA pairs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from musiceval.data.musicqa import load_dasheng_musicqa
from musiceval.metrics.cider import cider_d
from musiceval.metrics.lexical import LEXICAL_METRICS, bleu, bleu4, rouge_l, word_tokens
from musiceval.metrics.lexical_corpus import LexicalCorpus, lexical_scores
from musiceval.metrics.meteor import meteor
from musiceval.metrics.token_cache import TokenCache, unique

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl"


@pytest.fixture(scope="module")
def pairs():
    data = load_dasheng_musicqa(FIXTURE)
    refs = {it.id: it.reference for it in data.items}
    return [(r.text, refs[r.item_id]) for r in data.responses]


def _per_pair(cands, refs, df_references=None, use_stemmer=False):
    return {
        "bleu": np.array([bleu(c, r) for c, r in zip(cands, refs)]),
        "bleu4": np.array([bleu4(c, r) for c, r in zip(cands, refs)]),
        "meteor": np.array([meteor(c, r) for c, r in zip(cands, refs)]),
        "rouge_l": np.array([rouge_l(c, r, use_stemmer=use_stemmer) for c, r in zip(cands, refs)]),
        "cider": cider_d(cands, refs, df_references=df_references),
    }


def _assert_same(got, expected):
    for m in ("bleu", "bleu4", "meteor", "rouge_l"):  # same integers, same float expression
        np.testing.assert_array_equal(got[m], expected[m], err_msg=m)
    np.testing.assert_allclose(got["cider"], expected["cider"], rtol=0, atol=1e-12)


def test_corpus_scores_equal_the_per_pair_definitions_on_real_pairs(pairs):
    cands = [c for c, _ in pairs]
    refs = [r for _, r in pairs]
    _assert_same(LexicalCorpus(refs).score(cands), _per_pair(cands, refs))


def test_multi_reference_and_item_subsets_and_stemming(pairs):
    cands = [c for c, _ in pairs[:120]]
    refs = [[pairs[k][1], pairs[(k + 5) % 120][1], pairs[(k + 9) % 120][1]][: 1 + k % 3] for k in range(120)]
    corpus = LexicalCorpus(refs, use_stemmer=True)
    _assert_same(corpus.score(cands), _per_pair(cands, refs, use_stemmer=True))
    # a condition scoring only some items, in another order, against the same corpus
    items = list(range(119, -1, -7))
    sub = corpus.score([cands[k] for k in items], items=items)
    full = corpus.score(cands)
    for m in LEXICAL_METRICS:
        np.testing.assert_array_equal(sub[m], full[m][items], err_msg=m)


def test_corpus_equals_the_reference_implementations_directly(pairs):
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    from nltk.translate.meteor_score import meteor_score
    from pycocoevalcap.cider.cider import Cider
    from rouge_score import rouge_scorer

    from musiceval.metrics.meteor import require_wordnet

    sample = pairs[::4]
    cands, refs = [c for c, _ in sample], [r for _, r in sample]
    out = LexicalCorpus(refs).score(cands)
    m3 = SmoothingFunction().method3
    wn = require_wordnet()
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    hyp = [list(word_tokens(c)) for c in cands]
    ref = [list(word_tokens(r)) for r in refs]
    np.testing.assert_allclose(out["bleu"], [sentence_bleu([r], h, smoothing_function=m3) for h, r in zip(hyp, ref)], atol=1e-9)
    np.testing.assert_allclose(out["bleu4"], [sentence_bleu([r], h, weights=(0, 0, 0, 1), smoothing_function=m3) for h, r in zip(hyp, ref)], atol=1e-9)
    np.testing.assert_allclose(out["meteor"], [meteor_score([r], h, wordnet=wn) for h, r in zip(hyp, ref)], atol=1e-9)
    np.testing.assert_allclose(out["rouge_l"], [scorer.score(r, c)["rougeL"].fmeasure for c, r in zip(cands, refs)], atol=1e-9)
    _, per_item = Cider().compute_score({k: [" ".join(r)] for k, r in enumerate(ref)}, {k: [" ".join(h)] for k, h in enumerate(hyp)})
    np.testing.assert_allclose(out["cider"], per_item, atol=1e-9)


words = st.sampled_from(["a", "calm", "piano", "piece", "with", "drums", "the", "song", "is", "fast", "quick",
                         "playing", "played", "guitar", "guitars", "music", "slow", "!", "A", "Café"])
texts = st.lists(words, min_size=0, max_size=14).map(" ".join)
ref_texts = st.lists(words.filter(lambda w: w not in "!"), min_size=1, max_size=14).map(" ".join)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(texts, st.lists(ref_texts, min_size=1, max_size=3)), min_size=1, max_size=12), st.integers(1, 5))
def test_corpus_equals_per_pair_on_generated_texts_whatever_the_chunk(batch, chunk):
    cands = [c for c, _ in batch]
    refs = [r for _, r in batch]
    got = LexicalCorpus(refs).score(cands, chunk=chunk)
    _assert_same(got, _per_pair(cands, refs))


def test_each_distinct_text_is_tokenised_once_across_metrics_and_conditions(pairs, monkeypatch):
    cands = [c for c, _ in pairs[:80]]
    refs = [r for _, r in pairs[:80]]
    random_condition = cands[40:] + cands[:40]
    cache = TokenCache()
    seen: list[str] = []
    original = TokenCache._add

    def counting(self, new):
        seen.extend(new)
        return original(self, new)

    monkeypatch.setattr(TokenCache, "_add", counting)
    corpus = LexicalCorpus(refs, cache=cache)
    corpus.score(cands)
    df = corpus.document_frequencies()
    corpus.score(random_condition)
    assert corpus.document_frequencies() is df  # CIDEr-D document frequencies computed once
    assert len(seen) == len(set(seen)) == len(set(cands) | set(refs))
    # a second corpus on the same cache (another protocol run) tokenises nothing again
    LexicalCorpus(refs, cache=cache).score(random_condition)
    assert len(seen) == len(set(cands) | set(refs))


def test_lexical_scores_accepts_an_explicit_cache_and_matches_the_corpus(pairs):
    cands = [c for c, _ in pairs[:50]]
    refs = [r for _, r in pairs[:50]]
    cache = TokenCache()
    out = lexical_scores(cands, refs, ["bleu", "cider"], df_references=[r for _, r in pairs], cache=cache)
    np.testing.assert_allclose(out["cider"], cider_d(cands, refs, df_references=[r for _, r in pairs]), atol=1e-12)
    assert list(out) == ["bleu", "cider"] and len(cache) >= 50


def test_empty_and_punctuation_only_candidates_score_zero():
    out = LexicalCorpus(["a calm piano piece", "fast drums"]).score(["", "!!! ..."])
    for m in LEXICAL_METRICS:
        assert out[m].tolist() == [0.0, 0.0], m


def test_sort_based_unique_equals_numpy():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 1 << 50, 2000) // (1 << 40)
    u, inv, cnt = unique(a, return_inverse=True, return_counts=True)
    nu, ninv, ncnt = np.unique(a, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u, nu)
    np.testing.assert_array_equal(inv, ninv.reshape(-1))
    np.testing.assert_array_equal(cnt, ncnt)
    assert unique(np.zeros(0, np.int64)).size == 0


def test_lexical_scores_computes_the_df_of_one_corpus_once_across_calls(pairs, monkeypatch):
    from musiceval.metrics import lexical_corpus

    cands = [c for c, _ in pairs[:60]]
    refs = [r for _, r in pairs[:60]]
    all_refs = [r for _, r in pairs]
    calls = []
    original = lexical_corpus.gather

    def counting(ptr, rows, *values):
        calls.append(len(rows))
        return original(ptr, rows, *values)

    cache = TokenCache()
    first = lexical_scores(cands, refs, ["cider"], df_references=all_refs, cache=cache)
    monkeypatch.setattr(lexical_corpus, "gather", counting)
    again = lexical_scores(cands[::-1], refs[::-1], ["cider"], df_references=all_refs, cache=cache)
    np.testing.assert_array_equal(again["cider"], first["cider"][::-1])
    assert len(all_refs) not in calls  # no pass over the df corpus the second time
    other = lexical_scores(cands, refs, ["cider"], df_references=all_refs[:100], cache=cache)
    np.testing.assert_allclose(other["cider"], cider_d(cands, refs, df_references=all_refs[:100]), atol=1e-12)


def test_an_item_without_references_is_refused_by_index():
    with pytest.raises(ValueError, match="item 1 has no reference"):
        LexicalCorpus([["a song"], []])


def test_two_worker_processes_give_identical_scores(pairs):
    import sys

    if sys.platform == "win32":
        pytest.skip("forked workers are POSIX-only")
    cands = [c for c, _ in pairs]
    refs = [r for _, r in pairs]
    one = LexicalCorpus(refs).score(cands, chunk=50)
    two = LexicalCorpus(refs).score(cands, chunk=50, workers=2)
    for m in LEXICAL_METRICS:
        np.testing.assert_array_equal(two[m], one[m], err_msg=m)
