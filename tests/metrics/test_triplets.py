"""Triplet accuracy against a plain cosine-similarity loop, its properties, and the prompt sets."""
from __future__ import annotations

import statistics

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from musiceval.metrics.triplets import (
    NEGATION_PROMPTS,
    PAPER_PROMPTS,
    apply_prompt,
    label_text,
    mean_std_across_prompts,
    render_triplet,
    triplet_accuracy,
    triplet_correct,
    triplet_correct_indexed,
)


def reference_correct(a, p, n):
    """Row by row with scipy's cosine distance, as a user would write it."""
    distance = pytest.importorskip("scipy.spatial.distance")
    return np.array([1 - distance.cosine(ai, pi) > 1 - distance.cosine(ai, ni) for ai, pi, ni in zip(a, p, n)])


FIXED = np.random.default_rng(1234).normal(size=(3, 40, 16))


def test_matches_cos_sim_loop_on_fixed_vectors():
    a, p, n = FIXED
    expected = reference_correct(a, p, n)
    assert 0 < expected.sum() < len(expected)  # the fixed set exercises both outcomes
    np.testing.assert_array_equal(triplet_correct(a, p, n), expected)
    assert triplet_accuracy(a, p, n) == pytest.approx(expected.mean())


def test_indexed_form_matches_aligned_form():
    a, p, n = FIXED
    emb = np.concatenate([a, p, n])
    idx = np.arange(40)
    got = triplet_correct_indexed(emb, idx, idx + 40, idx + 80, chunk=7)
    np.testing.assert_array_equal(got, triplet_correct(a, p, n))


def test_scale_does_not_matter_and_ties_are_incorrect():
    a, p, n = FIXED
    np.testing.assert_array_equal(triplet_correct(a * 3.0, p * 0.1, n * 7.0), triplet_correct(a, p, n))
    assert not triplet_correct(a, p, p).any()


def test_empty_input_gives_nan_accuracy():
    empty = np.zeros((0, 4))
    assert np.isnan(triplet_accuracy(empty, empty, empty))
    assert triplet_correct_indexed(np.eye(3), [], [], []).shape == (0,)


@pytest.mark.parametrize("args, match", [
    ((np.ones(3), np.ones(3), np.ones(3)), "2-d"),
    ((np.ones((2, 3)), np.ones((2, 3)), np.ones((3, 3))), "differ in shape"),
    ((np.array([[np.nan, 1.0]]), np.ones((1, 2)), np.ones((1, 2))), "NaN"),
    ((np.zeros((1, 2)), np.ones((1, 2)), np.ones((1, 2))), "all zeros"),
])
def test_bad_embeddings_raise_naming_the_input(args, match):
    with pytest.raises(ValueError, match=match):
        triplet_correct(*args)


def test_bad_indices_raise():
    with pytest.raises(ValueError, match="out of range"):
        triplet_correct_indexed(np.eye(3), [0], [1], [3])
    with pytest.raises(ValueError, match="equally long"):
        triplet_correct_indexed(np.eye(3), [0, 1], [1], [2])


def _triplets(seed: int, n: int, grid: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # grid=True: small integer coordinates, so equal cosines (ties) occur
    x = rng.integers(-2, 3, size=(3, n, 4)).astype(float) if grid else rng.normal(size=(3, n, 4)) * rng.uniform(0.01, 100)
    x[np.linalg.norm(x, axis=2) == 0] = 1.0
    return x


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.booleans(), st.randoms(use_true_random=False))
def test_accuracy_is_a_fraction_invariant_to_triplet_order(seed, n, grid, rnd):
    a, p, neg = _triplets(seed, n, grid)
    acc = triplet_accuracy(a, p, neg)
    assert 0.0 <= acc <= 1.0
    order = list(range(n))
    rnd.shuffle(order)
    assert triplet_accuracy(a[order], p[order], neg[order]) == pytest.approx(acc)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40))
def test_swapping_positive_and_negative_complements_accuracy_without_ties(seed, n):
    a, p, neg = _triplets(seed, n, grid=False)
    unit = [v / np.linalg.norm(v, axis=1, keepdims=True) for v in (a, p, neg)]
    assume(np.all(np.abs(np.sum(unit[0] * unit[1], 1) - np.sum(unit[0] * unit[2], 1)) > 1e-9))
    assert triplet_accuracy(a, neg, p) == pytest.approx(1.0 - triplet_accuracy(a, p, neg))


def test_with_ties_swapping_counts_ties_wrong_both_ways():
    a = np.array([[1.0, 0.0], [1.0, 0.0]])
    p = np.array([[0.0, 1.0], [1.0, 0.0]])
    n = np.array([[0.0, -1.0], [0.0, 1.0]])  # first triplet: cos 0 vs 0, a tie
    assert triplet_accuracy(a, p, n) == 0.5 and triplet_accuracy(a, n, p) == 0.0


def test_prompt_sets_are_the_published_ones():
    assert len(PAPER_PROMPTS) == len(set(PAPER_PROMPTS)) == 20
    assert len(NEGATION_PROMPTS) == 4
    assert all(p.count("<label>") == 1 for p in PAPER_PROMPTS + NEGATION_PROMPTS)
    assert PAPER_PROMPTS[0] == "The sound of <label>" and PAPER_PROMPTS[-1] == "Sound of <label>"
    assert apply_prompt("A <label> music track", "Jazz") == "A Jazz music track"
    with pytest.raises(ValueError, match="placeholder"):
        apply_prompt("no placeholder", "Jazz")


def test_negation_replaces_the_no_of_the_negative_only():
    assert render_triplet("Jazz", "Swing music", "Jazz", prompt="Not music from <label>", negated=True) == (
        "Jazz", "Swing music", "Not music from Jazz")
    assert render_triplet("Jazz", "Blues", "Techno", prompt="Music of <label>") == (
        "Music of Jazz", "Music of Blues", "Music of Techno")


def test_definition_variants():
    assert label_text("Jazz", "label") == "Jazz"
    assert label_text("Jazz", "definition", "A music genre.") == "A music genre."
    assert label_text("Jazz", "label+definition", "music genre.") == "Jazz is a music genre."
    with pytest.raises(ValueError, match="needs a definition"):
        label_text("Jazz", "definition", "")
    with pytest.raises(ValueError, match="unknown variant"):
        label_text("Jazz", "nickname", "x")


def test_mean_and_population_std_across_prompts():
    per_prompt = {"p1": 0.6, "p2": 0.7, "p3": 0.95}
    mean, std = mean_std_across_prompts(per_prompt)
    assert mean == pytest.approx(statistics.fmean(per_prompt.values()))
    assert std == pytest.approx(statistics.pstdev(per_prompt.values()))  # ddof=0, as published
    with pytest.raises(ValueError):
        mean_std_across_prompts({})
