"""Bounds, identity, symmetry and hostile inputs for the lexical metrics."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from musiceval.metrics.cider import cider_d
from musiceval.metrics.lexical import bleu, bleu4, rouge_l, validate
from musiceval.metrics.lexical_corpus import lexical_scores
from musiceval.metrics.meteor import meteor

WORDS = st.sampled_from("the a calm fast slow piano guitar drums rock jazz song music with and bass sad".split())
SENTENCE = st.lists(WORDS, min_size=1, max_size=25).map(" ".join)
PAIR_METRICS = {"bleu": bleu, "bleu4": bleu4, "meteor": meteor, "rouge_l": rouge_l}
FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(SENTENCE, SENTENCE)
def test_pair_metrics_lie_in_unit_interval(cand, ref):
    for name, fn in PAIR_METRICS.items():
        value = fn(cand, ref)
        assert 0.0 <= value <= 1.0, name


@FAST
@given(SENTENCE)
def test_identity_scores_the_maximum(text):
    n = len(text.split())
    assert rouge_l(text, text) == pytest.approx(1.0)
    if n >= 4:
        assert bleu(text, text) == pytest.approx(1.0)
        assert bleu4(text, text) == pytest.approx(1.0)
    else:  # fewer than 4 tokens: the missing orders are NIST-smoothed (1/2, 1/4, ...), as in nltk
        assert bleu(text, text) == pytest.approx(np.prod([0.5**k for k in range(1, 5 - n)]) ** 0.25)
    # METEOR's fragmentation penalty keeps it below 1: the best is 1 - 0.5 / n^3 (one chunk)
    assert meteor(text, text) == pytest.approx((1 - 0.5 / n**3), abs=1e-9)


@FAST
@given(SENTENCE, SENTENCE)
def test_rouge_l_f_measure_is_symmetric(a, b):
    assert rouge_l(a, b) == pytest.approx(rouge_l(b, a))


@FAST
@given(st.lists(st.tuples(SENTENCE, SENTENCE), min_size=2, max_size=12))
def test_cider_d_lies_in_zero_to_ten(pairs):
    values = cider_d([c for c, _ in pairs], [r for _, r in pairs])
    assert np.all(values >= 0.0) and np.all(values <= 10.0 + 1e-9)


def test_cider_d_identity_is_maximal_when_references_differ():
    refs = ["a calm piano piece with soft strings", "fast rock with loud drums", "a jazz trio with upright bass"]
    values = cider_d(refs, refs)
    assert np.all(values > 5.0)
    assert np.all(values <= 10.0)


@pytest.mark.parametrize("empty", ["", "   ", "\n\t", "!!! ..."])
def test_empty_candidate_scores_zero_everywhere(empty):
    out = lexical_scores([empty, "a calm piano"], ["a calm piano piece", "a calm piano"])
    for name, values in out.items():
        assert values[0] == 0.0, name


@pytest.mark.parametrize("bad, match", [(None, "must be a string"), (b"\xff\xfe bad", "not valid UTF-8"), (3, "must be a string")])
def test_invalid_candidate_raises_naming_it(bad, match):
    with pytest.raises(ValueError, match=match):
        validate(bad, "a reference")
    with pytest.raises(ValueError, match=match):
        bleu(bad, "a reference")


def test_utf8_bytes_are_decoded():
    assert bleu("café au lait music".encode(), "café au lait music") == pytest.approx(1.0)


@pytest.mark.parametrize("ref", ["", "   ", "?!", [], None])
def test_reference_without_words_is_an_error(ref):
    with pytest.raises(ValueError):
        validate("a song", ref)


def test_one_word_reference_gives_defined_values():
    out = lexical_scores(["rock", "rock music", "jazz"], ["rock", "rock", "rock"])
    assert out["bleu"][0] == pytest.approx((0.5 * 0.25 * 0.125) ** 0.25)  # NIST-smoothed orders 2-4
    assert out["rouge_l"][0] == 1.0 and out["rouge_l"][2] == 0.0
    assert 0 < out["meteor"][1] < 1 and out["meteor"][2] == 0.0
    assert np.all(np.isfinite(np.concatenate(list(out.values()))))


def test_word_repeated_ten_thousand_times_is_scored():
    loop = " ".join(["go"] * 10_000)
    out = lexical_scores([loop], ["go go go and stop"], df_references=["go go go and stop", "a calm piano"])
    for name, values in out.items():
        assert np.isfinite(values[0]) and 0.0 <= values[0] <= (10.0 if name == "cider" else 1.0), name
    assert out["bleu"][0] < 0.01  # brevity is no issue, precision collapses


def test_one_megabyte_answer_is_scored():
    big = ("the piano plays a calm melody with strings and soft drums " * 18_000)[:1_000_000]
    assert len(big) == 1_000_000
    out = lexical_scores([big], ["a calm piano melody with strings"], df_references=["a calm piano melody with strings", "loud rock"])
    for name, values in out.items():
        assert np.isfinite(values[0]) and values[0] >= 0.0, name
