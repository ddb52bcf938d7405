"""Set metrics of factual QA against scikit-learn and with hypothesis properties."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, precision_recall_fscore_support
from sklearn.preprocessing import MultiLabelBinarizer

from musiceval.metrics.sets import (
    aggregate_chunks,
    binary_choice_correct,
    binary_choices,
    hierarchy_labels,
    item_prf,
    per_label_scores,
    permutation_null_f1,
    set_scores,
    true_false_scores,
)

LABELS = ["pop", "rock", "jazz", "blues", "folk"]
label_sets = st.lists(st.sampled_from(LABELS), max_size=4)
pairs = st.lists(st.tuples(label_sets, label_sets), min_size=1, max_size=25)


def _sk(pred, true, average):
    mlb = MultiLabelBinarizer(classes=LABELS).fit([LABELS])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return precision_recall_fscore_support(mlb.transform(true), mlb.transform(pred), average=average, zero_division=0)


def test_spec_hedging_example():
    p, r, f1 = item_prf(["pop", "rock"], ["pop"])
    assert (p, r) == (0.5, 1.0)
    assert f1 == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    "pred,true,expected",
    [([], ["jazz"], (0, 0, 0)), (["jazz"], [], (0, 0, 0)), ([], [], (1, 1, 1)), (["a", "a"], ["a"], (1, 1, 1))],
)
def test_documented_empty_cases(pred, true, expected):
    assert item_prf(pred, true) == expected


def test_both_empty_value_is_configurable():
    assert item_prf([], [], both_empty=0.0) == (0.0, 0.0, 0.0)


FIXED_PRED = [["pop", "rock"], ["jazz"], [], ["blues", "folk", "pop"], ["rock"]]
FIXED_TRUE = [["pop"], ["blues"], ["folk"], ["blues", "pop"], ["rock"]]


def test_fixed_vectors_match_sklearn():
    s = set_scores(FIXED_PRED, FIXED_TRUE)
    for average, ours in (("micro", s["micro"]), ("samples", s["macro"])):
        p, r, f, _ = _sk(FIXED_PRED, FIXED_TRUE, average)
        assert (ours["precision"], ours["recall"], ours["f1"]) == pytest.approx((p, r, f))
    mlb = MultiLabelBinarizer(classes=LABELS).fit([LABELS])
    assert s["macro"]["accuracy"] == pytest.approx(accuracy_score(mlb.transform(FIXED_TRUE), mlb.transform(FIXED_PRED)))


@settings(max_examples=50, deadline=None)
@given(pairs)
def test_macro_and_micro_match_sklearn_without_both_empty_items(items):
    items = [(p, t) for p, t in items if p or t]
    if not items:
        return
    pred, true = [p for p, _ in items], [t for _, t in items]
    s = set_scores(pred, true)
    for average, ours in (("micro", s["micro"]), ("samples", s["macro"])):
        p, r, f, _ = _sk(pred, true, average)
        assert (ours["precision"], ours["recall"], ours["f1"]) == pytest.approx((p, r, f))


@settings(max_examples=100, deadline=None)
@given(pairs)
def test_per_item_values_are_bounded_and_f1_is_harmonic_mean(items):
    s = set_scores([p for p, _ in items], [t for _, t in items])
    per = s["per_item"]
    for v in per.values():
        assert np.all((v >= 0) & (v <= 1))
    pr = per["precision"] + per["recall"]
    harmonic = np.divide(2 * per["precision"] * per["recall"], pr, out=np.zeros_like(pr), where=pr > 0)
    both_empty = np.array([not p and not t for p, t in items])
    assert np.allclose(per["f1"][~both_empty], harmonic[~both_empty])
    assert np.all(per["accuracy"] <= per["f1"])


@settings(max_examples=100, deadline=None)
@given(pairs)
def test_scores_ignore_order_and_duplicates(items):
    a = set_scores([p for p, _ in items], [t for _, t in items])
    b = set_scores([list(reversed(p)) * 2 for p, _ in items], [t[::-1] for _, t in items])
    assert a["macro"] == b["macro"] and a["micro"] == b["micro"]


def test_per_label_matches_sklearn_average_none():
    table = per_label_scores(FIXED_PRED, FIXED_TRUE, labels=LABELS)
    p, r, f, support = _sk(FIXED_PRED, FIXED_TRUE, None)
    assert [row["precision"] for row in table.values()] == pytest.approx(list(p))
    assert [row["recall"] for row in table.values()] == pytest.approx(list(r))
    assert [row["f1"] for row in table.values()] == pytest.approx(list(f))
    assert [row["support"] for row in table.values()] == list(support)


def test_validate_names_bad_input():
    with pytest.raises(ValueError, match="pred has 1 items but true has 2"):
        set_scores([["a"]], [["a"], ["b"]])
    with pytest.raises(ValueError, match=r"pred\[0\] is a string"):
        set_scores(["pop"], [["pop"]])


def test_true_false_table_accuracy_and_set_metrics():
    labels = ["piano", "violin", "cello"]
    answers = [{"piano": True, "violin": False, "cello": None}, {"piano": True, "violin": True, "cello": False}]
    out = true_false_scores(answers, [["piano", "cello"], ["violin"]], labels)
    # cells: row 1: piano ok, violin ok, cello unanswered; row 2: piano wrong, violin ok, cello ok
    assert out["accuracy"] == pytest.approx(4 / 6)
    assert out["n_unanswered"] == 1
    assert out["micro"]["precision"] == pytest.approx(2 / 3)
    assert out["micro"]["recall"] == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="no answer for labels"):
        true_false_scores([{"piano": True}], [["piano"]], labels)


def test_chunk_aggregation_any_and_majority():
    chunks = [["piano"], ["piano", "violin"], ["cello", "piano"], ["violin"]]
    assert aggregate_chunks(chunks, "any") == ["piano", "violin", "cello"]
    assert aggregate_chunks(chunks, "majority") == ["piano"]  # violin 2/4 is not a strict majority
    with pytest.raises(ValueError):
        aggregate_chunks(chunks, "mean")


@pytest.mark.parametrize("n", [1, 2, 7, 10, 101])
def test_binary_choice_true_first_in_exactly_half(n):
    truth = [LABELS[i % len(LABELS)] for i in range(n)]
    choices = binary_choices(truth, LABELS, seed=3)
    first = sum(1 for _, _, idx in choices if idx == 0)
    assert first in (n // 2, n - n // 2)
    if n % 2 == 0:
        assert first == n // 2
    for (a, b, idx), label in zip(choices, truth):
        assert (a, b)[idx] == label and (a, b)[1 - idx] != label
    assert choices == binary_choices(truth, LABELS, seed=3)


def test_binary_choice_distractor_is_never_another_true_label():
    truths = [("piano", "violin", "viola", "cello"), ("cello",)] * 20
    choices = binary_choices([t[0] for t in truths], ["piano", "violin", "viola", "cello", "flute"], seed=0, exclude=truths)
    assert all((a, b)[1 - idx] not in t for (a, b, idx), t in zip(choices, truths))
    with pytest.raises(ValueError, match="no distractor"):
        binary_choices(["piano"], ["piano", "violin"], exclude=[("piano", "violin")])
    with pytest.raises(ValueError, match="one label set per item"):
        binary_choices(["piano"], ["piano", "violin"], exclude=[])


def test_binary_choice_scoring():
    assert binary_choice_correct(["rock"], "rock", "pop") == 1.0
    assert binary_choice_correct(["rock", "pop"], "rock", "pop") == 0.0
    assert binary_choice_correct([], "rock", "pop") == 0.0


def test_fma_same_tree_and_same_node():
    parent = {"Rock": None, "Punk": "Rock", "Post-Punk": "Punk", "Pop": None, "Synth-Pop": "Pop"}
    pred, true = ["Post-Punk"], ["Punk"]
    assert set_scores([pred], [true])["macro"]["f1"] == 0.0  # same node
    tree = set_scores([hierarchy_labels(pred, parent)], [hierarchy_labels(true, parent)])
    assert tree["macro"]["f1"] == 1.0  # same tree
    assert hierarchy_labels(["Synth-Pop", "Pop", "Unknown"], parent) == ["Pop", "Unknown"]
    with pytest.raises(ValueError, match="cycle"):
        hierarchy_labels(["a"], {"a": "b", "b": "a"})


def test_permutation_null_is_seeded_and_below_perfect_prediction():
    truth = [[LABELS[i % 5]] for i in range(50)]
    null = permutation_null_f1(truth, truth, n_permutations=200, seed=1)
    assert null.shape == (200,)
    assert np.array_equal(null, permutation_null_f1(truth, truth, n_permutations=200, seed=1))
    # balanced 5 classes: chance F1 of a perfect predictor permuted is about 1/5
    assert abs(null.mean() - 0.2) < 0.05
