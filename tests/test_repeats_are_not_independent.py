"""K sampled answers per item (docs/evaluate-your-model.md, "Sampled answers") enter the gates as K
items ``<id>#r<k>`` in the original item's group. A model that answers the same thing K times has
told us no more than one answer would: K identical repeats must not make a gate pass that one
repeat does not, under every interval method, while the same rows taken as independent items
would (so the check has teeth)."""
from __future__ import annotations

import numpy as np
import pytest

from musiceval.data.answers import repeat_id
from musiceval.gates import Gate, GateConfig
from musiceval.records import ItemScores, Outcome

K = 5
N = 30
METHODS = ("auto", "bca", "percentile")


def one(values, condition="correct", groups=None) -> ItemScores:
    ids = [f"q{i}" for i in range(len(values))]
    return ItemScores("m", ids=ids, values=np.asarray(values, dtype=float), condition=condition, groups=groups)


def repeated(scores: ItemScores, *, clustered: bool = True) -> ItemScores:
    """K identical repeats of every item, as the readers make them (or, unclustered, as if independent)."""
    ids = [repeat_id(i, k) for i in scores.ids for k in range(K)]
    groups = [(g if scores.groups else i) for i, g in zip(scores.ids, scores.groups or scores.ids) for _ in range(K)]
    return ItemScores(scores.metric, ids=ids, values=np.repeat(scores.values, K), condition=scores.condition,
                      groups=groups if clustered else None)


def gate(method: str) -> Gate:
    return Gate(GateConfig(n_resamples=2000, ci_method=method), sink=lambda row: None)


ACCURACY = [1.0] * 12 + [0.0] * 18  # 0.40 against chance 0.25 on 30 items: undecided
CORRECT = [1.0] * 12 + [0.0] * 18
RANDOM = [1.0] * 5 + [0.0] * 7 + [1.0] * 3 + [0.0] * 15  # Correct only right on 7, Random only on 3
RNG = np.random.default_rng(3)
SCORE = np.clip(0.5 + RNG.normal(0.03, 0.2, N), 0, 1)  # a small continuous effect over 0.5
OTHER = np.clip(SCORE - RNG.normal(0.04, 0.2, N), 0, 1)


def decide_each(method: str):
    g = gate(method)
    yield "binomial", lambda s: g.binomial_greater(s[0], 0.25, name="acc").outcome, (one(ACCURACY),)
    yield "chance", lambda s: g.greater_than_chance(s[0], 0.5, name="mean").outcome, (one(SCORE),)
    yield "at_least", lambda s: g.at_least(s[0], 0.3, name="rate").outcome, (one(ACCURACY),)
    yield "mcnemar", lambda s: g.mcnemar_greater(s[0], s[1], name="listens").outcome, (
        one(CORRECT), one(RANDOM, "random"))
    yield "paired", lambda s: g.paired_greater(s[0], s[1], name="paired").outcome, (
        one(SCORE), one(OTHER, "random"))


@pytest.mark.parametrize("method", METHODS)
def test_identical_repeats_do_not_pass_a_gate_one_answer_does_not(method):
    for name, decide, single in decide_each(method):
        alone = decide(single)
        assert alone != Outcome.PASS, (name, method, "the data must leave one repeat undecided")
        assert decide(tuple(repeated(s) for s in single)) == alone, (name, method)


def test_the_same_rows_taken_as_independent_items_would_pass():
    """Without the item's group the K copies look like K x N items and decide: what the nesting prevents."""
    for name, decide, single in decide_each("auto"):
        if name in ("binomial", "mcnemar", "at_least"):
            assert decide(tuple(repeated(s, clustered=False) for s in single)) == Outcome.PASS, name


def test_the_bootstrap_mcnemar_p_value_counts_clusters_not_rows():
    """With a bootstrap method, McNemar's exact p-value counts rows as independent: on clustered
    rows the gate reports the clustered sign-flip test's p-value instead."""
    g = gate("bca")
    a, b = repeated(one(CORRECT)), repeated(one(RANDOM, "random"))
    result = g.mcnemar_greater(a, b, name="listens")
    single = g.mcnemar_greater(one(CORRECT), one(RANDOM, "random"), name="listens")
    assert "clustered sign-flip" in result.test
    assert result.p_value > 0.01 and result.p_value >= single.p_value - 0.02


def test_the_permutation_null_p_value_counts_clusters_not_rows():
    """A permutation of K x N rows has a null K times too narrow for K identical repeats: on
    clustered rows the p-value is the clustered sign-flip test's, as undecided as one repeat's."""
    rng = np.random.default_rng(5)
    f1 = np.clip(rng.normal(0.46, 0.25, N), 0, 1)
    g = gate("auto")
    single = g.beats_permutation_null(one(f1), rng.normal(0.4, 0.05, 2000), name="f1")
    rows = g.beats_permutation_null(repeated(one(f1)), rng.normal(0.4, 0.05 / np.sqrt(K), 2000), name="f1")
    assert single.outcome == rows.outcome != Outcome.PASS
    assert "clustered sign-flip" in rows.test and rows.p_value > 0.05
