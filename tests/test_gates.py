"""Gates: pairing by item id, counted failures, outcome per method, sink rows, seeds."""
from __future__ import annotations

import math

import numpy as np
import pytest

from musiceval.gates import Gate, GateConfig, gate_seed
from musiceval.stats.pairing import align_paired
from musiceval.records import ItemFailure, ItemScores, Outcome


def scores(values, *, ids=None, condition="correct", groups=None, failures=(), metric="m"):
    ids = ids if ids is not None else [f"i{k}" for k in range(len(values))]
    return ItemScores(metric, ids=ids, values=values, condition=condition, groups=groups, failures=failures)


@pytest.fixture
def rows():
    return []


@pytest.fixture
def gate(rows):
    return Gate(GateConfig(n_resamples=2000, seed=3), sink=rows.append)


def test_paired_greater_aligns_by_id_and_counts_unpaired(gate, rows):
    a = scores([0.9, 0.8, 0.7, 0.95] * 25, ids=[f"x{k}" for k in range(100)])
    # b lists the same items in reverse order, plus one item a lacks
    b_ids = [f"x{k}" for k in reversed(range(100))] + ["extra"]
    b = scores(list(np.asarray([0.5, 0.4, 0.3, 0.55] * 25)[::-1]) + [0.0], ids=b_ids, condition="random")
    result = gate.paired_greater(a, b, name="a > b")
    assert result.outcome is Outcome.PASS
    assert result.estimate == pytest.approx(0.4)
    assert result.n == 100 and result.n_failed == 1
    assert "1 unpaired" in result.detail
    kinds = [r["type"] for r in rows]
    assert kinds.count("scores") == 2 and kinds[-1] == "gate"


def test_align_paired_carries_groups():
    a = scores([1.0, 2.0, 3.0], ids=["a", "b", "c"], groups=["t1", "t1", "t2"])
    b = scores([0.0, 0.0], ids=["c", "a"])
    va, vb, groups, unpaired = align_paired(a, b)
    assert va.tolist() == [1.0, 3.0] and groups == ("t1", "t2") and unpaired == ["b"]


def test_failures_are_counted_not_dropped(gate):
    a = scores([1.0] * 40, failures=[ItemFailure("bad", "empty response")])
    result = gate.at_least(a, 0.5, name="at least")
    assert result.n_failed == 1 and result.outcome is Outcome.PASS


def test_binomial_gate_exact_path_and_clustered_path(gate):
    flat = scores([1.0] * 60 + [0.0] * 140)  # 30 % vs 25 % chance, n=200: not decisive
    r = gate.binomial_greater(flat, 0.25, name="flat")
    assert r.test.startswith("exact binomial") and r.outcome is Outcome.INCONCLUSIVE
    strong = scores([1.0] * 120 + [0.0] * 80, groups=[str(k // 4) for k in range(200)])
    r = gate.binomial_greater(strong, 0.25, name="clustered")
    assert "effective sample size" in r.test and "clustered" in r.test and r.outcome is Outcome.PASS
    assert r.ci[0] + 0.25 >= 0 and r.ci[1] + 0.25 <= 1
    with pytest.raises(ValueError, match="0/1"):
        gate.binomial_greater(scores([0.5, 1.0]), 0.25, name="bad")


def test_mcnemar_gate(gate):
    a = scores([1.0] * 80 + [0.0] * 20)
    b = scores([1.0] * 30 + [0.0] * 70, condition="noise")
    r = gate.mcnemar_greater(a, b, name="drop under noise")
    assert r.outcome is Outcome.PASS and r.p_value < 1e-9 and "discordant 50/0" in r.detail


def test_fail_and_inconclusive_outcomes(gate):
    assert gate.at_least(scores(np.linspace(0.1, 0.2, 50)), 0.5, name="low").outcome is Outcome.FAIL
    rng = np.random.default_rng(0)
    coin = scores(rng.normal(0.5, 0.3, 15))
    assert gate.greater_than_chance(coin, 0.5, name="coin").outcome is Outcome.INCONCLUSIVE


def test_permutation_gate_reports_chance(gate):
    r = gate.beats_permutation_null(scores([0.8] * 30 + [0.6] * 30), np.full(200, 0.2) + np.linspace(0, 0.01, 200), name="perm")
    assert r.outcome is Outcome.PASS and r.threshold == pytest.approx(0.205)
    assert r.p_value == pytest.approx(1 / 201)


def test_empty_input_is_inconclusive_not_a_pass(gate):
    r = gate.at_least(scores([], failures=[ItemFailure("x", "unparseable")]), 0.5, name="empty")
    assert r.outcome is Outcome.INCONCLUSIVE and r.n == 0 and r.n_failed == 1


def test_finding_never_fails(gate, rows):
    r = gate.finding("bleu adversarial >= skyline", estimate=0.12, protocol="freeform")
    assert r.outcome is Outcome.FINDING and rows[-1]["outcome"] == "FINDING"


def test_gate_seed_depends_on_run_seed_and_name_only():
    assert gate_seed(0, "a") == gate_seed(0, "a") != gate_seed(1, "a")
    assert gate_seed(0, "a") != gate_seed(0, "b")


def test_same_seed_same_interval_different_seed_different_interval():
    x = scores(np.random.default_rng(0).normal(0.2, 1, 80))
    # the bootstrap (ci_method="bca") depends on the seed; the calibrated default is deterministic
    r1 = Gate(GateConfig(n_resamples=1000, seed=1, ci_method="bca")).greater_than_chance(x, 0.0, name="g")
    r2 = Gate(GateConfig(n_resamples=1000, seed=1, ci_method="bca")).greater_than_chance(x, 0.0, name="g")
    r3 = Gate(GateConfig(n_resamples=1000, seed=2, ci_method="bca")).greater_than_chance(x, 0.0, name="g")
    assert r1.ci == r2.ci and r1.ci != r3.ci and r1.seed == r2.seed != r3.seed
    auto1 = Gate(GateConfig(seed=1)).greater_than_chance(x, 0.0, name="g")
    auto2 = Gate(GateConfig(seed=2)).greater_than_chance(x, 0.0, name="g")
    assert auto1.ci == auto2.ci and "shape=continuous" in auto1.test


def test_item_scores_validation():
    with pytest.raises(ValueError, match="unique"):
        scores([1.0, 2.0], ids=["a", "a"])
    with pytest.raises(ValueError, match="non-finite"):
        scores([1.0, math.nan])
    with pytest.raises(ValueError, match="one value per id"):
        ItemScores("m", ids=["a"], values=[1.0, 2.0])


def test_paired_finding_aligns_records_and_never_fails(gate, rows):
    a = scores([0.2, 0.3, 0.4], ids=["x", "y", "z"])
    b = scores([0.9, 0.9], ids=["z", "x"], condition="skyline")
    r = gate.paired_finding(a, b, name="a - b", detail="known property")
    assert r.outcome is Outcome.FINDING and r.n == 2 and r.n_failed == 1
    assert r.estimate == pytest.approx(((0.2 - 0.9) + (0.4 - 0.9)) / 2)
    assert r.ci[0] <= r.estimate <= r.ci[1]
    assert r.detail == "n=2 paired items (1 unpaired excluded); known property"
    assert [row["type"] for row in rows] == ["scores", "scores", "gate"]


def test_interval_finding_records_the_mean_minus_a_level_with_the_gate_interval(gate, rows):
    s = scores([0.2, 0.5, 0.9, 0.4], failures=[ItemFailure("q", "unreadable")])
    r = gate.interval_finding(s, name="weak vs chance", minus=0.25, detail="weak model")
    assert r.outcome is Outcome.FINDING and r.n == 4 and r.n_failed == 1 and r.detail == "weak model"
    assert r.estimate == pytest.approx(0.5 - 0.25)
    ci = gate.interval(s.values - 0.25, s.groups, name="weak vs chance")
    assert r.ci == (ci.low, ci.high)
    assert [row["type"] for row in rows] == ["scores", "gate"]
    empty = gate.interval_finding(scores([], ids=[]), name="none")
    assert math.isnan(empty.estimate) and empty.outcome is Outcome.FINDING


def test_interval_uses_the_gate_configuration_and_name_seed():
    gate = Gate(GateConfig(n_resamples=2000, seed=3, ci_method="bca"))  # bootstrap: seeded by name
    x = np.random.default_rng(0).normal(0.1, 1, 60)
    assert gate.interval(x, name="n1") == gate.interval(x, name="n1") != gate.interval(x, name="n2")
    assert gate.interval(x, name="n1").method.startswith("bca bootstrap (2000 resamples")
