"""The factual permutation null with K sampled answers per item (docs/evaluate-your-model.md,
"Sampled answers"): whole items move (:func:`musiceval.stats.permutation.moved_rows`), so a row is
never scored against the truth of another repeat of its own item unless the permutation leaves the
whole item in place. With one answer per item the null is today's, draw for draw and bit for bit."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from musiceval.extraction import load_vocabulary
from musiceval.metrics.sets import binarize, f1_matrix, permutation_null_f1, validate
from musiceval.protocols.factual.engine import factual_set, load_factual, score_factual
from musiceval.stats import permutation_null
from musiceval.stats.permutation import item_codes, moved_rows

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "factual"
LABELS = ["pop", "rock", "jazz", "blues", "folk"]


def row_permutation_null(pred, true, *, n_permutations=1000, seed=0) -> np.ndarray:
    """The null before items moved whole (every row permuted on its own), kept here to compare with."""
    pred_sets, true_sets = validate(pred, true)
    labels = sorted(set().union(*pred_sets, *true_sets)) if pred_sets else []
    p, t = binarize(pred_sets, labels), binarize(true_sets, labels)
    return permutation_null(lambda perm: float(f1_matrix(p[perm], t).mean()), len(pred_sets),
                            n_permutations=n_permutations, seed=seed)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(LABELS), max_size=3), st.lists(st.sampled_from(LABELS), max_size=3)),
                min_size=2, max_size=30), st.integers(0, 2**16))
def test_one_answer_per_item_is_the_row_permutation_bit_for_bit(pairs, seed):
    pred, true = [p for p, _ in pairs], [t for _, t in pairs]
    old = row_permutation_null(pred, true, n_permutations=40, seed=seed)
    names = [f"item{len(pairs) - k}" for k in range(len(pairs))]  # any distinct names, in any order
    assert np.array_equal(permutation_null_f1(pred, true, n_permutations=40, seed=seed), old)
    assert np.array_equal(permutation_null_f1(pred, true, n_permutations=40, seed=seed, items=names), old)


def test_a_recorded_file_without_repeats_keeps_its_chance_level_bit_for_bit():
    data = factual_set(load_factual(FIXTURES / "nsynth_midashenglm.jsonl", "dasheng"))
    result = score_factual(data, load_vocabulary("nsynth"), seed=4, n_permutations=300)
    ids = sorted(result.predictions["correct"])
    truths = dict(zip(data.ids, data.truths))
    vocab = load_vocabulary("nsynth")
    canon = {i: tuple(dict.fromkeys(vocab.canonical(x) for x in truths[i])) for i in ids}
    old = row_permutation_null([result.predictions["correct"][i] for i in ids], [canon[i] for i in ids],
                               n_permutations=300, seed=4)
    assert len(ids) == 300 and np.array_equal(result.null_f1, old)
    assert result.metrics["chance"]["method"] == "permutation of predictions across items (300, seed 4)"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=40), st.integers(0, 2**16))
def test_every_row_moves_once_and_an_items_rows_land_on_one_place(raw, seed):
    codes = item_codes([f"q{c}" for c in raw], len(raw))
    n = int(codes.max()) + 1
    perm = np.random.default_rng(seed).permutation(n)
    rows, place = moved_rows(codes, perm)
    assert sorted(rows.tolist()) == list(range(len(raw)))  # each answer scored once
    for item in range(n):  # all rows of item perm[j] land on place j, together
        assert set(place[codes[rows] == perm[item]].tolist()) <= {item}


def test_repeats_move_together_where_rows_were_permuted_against_their_own_item():
    """Perfect answers, 20 items with distinct labels, K = 5 identical repeats: moved whole, a
    permutation scores each item all right (left in place) or all wrong, so every null mean is a
    share of items and the null is as wide as one answer per item's; the row permutation paired
    rows with other repeats of their own item and gave a null about sqrt(K) too narrow."""
    n, k = 20, 5
    truth = [[f"label{i}"] for i in range(n) for _ in range(k)]
    items = [f"q{i}" for i in range(n) for _ in range(k)]
    whole = permutation_null_f1(truth, truth, n_permutations=2000, seed=1, items=items)
    rows = row_permutation_null(truth, truth, n_permutations=2000, seed=1)
    one = permutation_null_f1(truth[::k], truth[::k], n_permutations=2000, seed=1)
    assert np.allclose(whole * n, np.round(whole * n))  # a share of whole items
    assert not np.allclose(rows * n, np.round(rows * n))  # rows of one item split up
    assert np.array_equal(whole, one)  # K identical repeats: the null of one answer per item
    assert whole.std() > 1.8 * rows.std()


def test_rows_of_one_item_with_different_truths_are_refused_naming_the_input():
    with pytest.raises(ValueError, match=r"answer one item \('q1'\) with different truths"):
        permutation_null_f1([["pop"], ["rock"], ["jazz"]], [["pop"], ["rock"], ["jazz"]], items=["q1", "q1", "q2"])


def test_a_factual_file_with_repeats_permutes_whole_items(tmp_path):
    truths = {"a": "pop", "b": "rock", "c": "jazz", "d": "blues"}
    rows = [{"item_id": i, "prompt": "Which genre?", "text": f"It is {g}.", "labels": [g], "repeat": r}
            for i, g in truths.items() for r in range(3)]
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in rows))
    result = score_factual(factual_set(load_factual(path, "musiceval")), load_vocabulary("gtzan"), n_permutations=200,
                           conditions=("correct",))
    assert len(result.predictions["correct"]) == 12
    assert "the repeats of an item together" in result.metrics["chance"]["method"]
    assert np.allclose(result.null_f1 * 4, np.round(result.null_f1 * 4))  # 0, 1, 2 or 4 of the 4 items in place
