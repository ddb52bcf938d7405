"""Extractor agreement metrics against scikit-learn on fixed label sets."""
import numpy as np
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, jaccard_score

from musiceval.metrics.agreement import agreement_summary, exact_set_agreement, label_kappas, mean_jaccard
from musiceval.metrics.sets import binarize

LABELS = ["blues", "jazz", "pop", "rock"]
RULES = [["pop", "rock"], ["jazz"], [], ["blues"], ["pop"], ["rock", "jazz"], ["pop"], ["blues", "jazz"]]
LLM = [["pop"], ["jazz"], [], ["blues"], ["rock"], ["rock", "jazz"], ["pop", "jazz"], ["blues"]]


def test_exact_set_agreement_is_sklearn_subset_accuracy():
    a, b = binarize([set(x) for x in RULES], LABELS), binarize([set(x) for x in LLM], LABELS)
    assert exact_set_agreement(RULES, LLM) == pytest.approx(accuracy_score(a, b)) == pytest.approx(4 / 8)


def test_mean_jaccard_matches_sklearn_samples_average_with_both_empty_as_one():
    a, b = binarize([set(x) for x in RULES], LABELS), binarize([set(x) for x in LLM], LABELS)
    expected = jaccard_score(a, b, average="samples", zero_division=1.0)
    assert mean_jaccard(RULES, LLM) == pytest.approx(expected)
    assert mean_jaccard([[]], [[]]) == 1.0 and mean_jaccard([["pop"]], [[]]) == 0.0


def test_label_kappas_match_sklearn_and_are_nan_when_undefined():
    a, b = binarize([set(x) for x in RULES], LABELS), binarize([set(x) for x in LLM], LABELS)
    kappas = label_kappas(RULES, LLM, LABELS)
    for j, label in enumerate(LABELS):
        assert kappas[label] == pytest.approx(cohen_kappa_score(a[:, j], b[:, j]))
    constant = label_kappas([["pop"], ["pop"]], [["pop"], ["pop"]], ["pop", "rock"])
    assert np.isnan(constant["pop"]) and np.isnan(constant["rock"])  # both raters constant: kappa undefined


def test_summary_averages_the_defined_kappas():
    s = agreement_summary(RULES, LLM, LABELS + ["country"])  # country never named: undefined kappa
    assert s["n"] == 8 and s["n_kappa_labels"] == 4 and np.isnan(s["kappa_per_label"]["country"])
    assert s["kappa_mean"] == pytest.approx(np.mean([s["kappa_per_label"][x] for x in LABELS]))


def test_mismatched_inputs_are_refused():
    with pytest.raises(ValueError, match="pass one label set per item"):
        exact_set_agreement([["pop"]], [])
    with pytest.raises(ValueError, match="not a string"):
        mean_jaccard("pop", ["pop"])
