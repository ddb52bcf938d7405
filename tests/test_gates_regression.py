"""Regression gates: non_inferior / superior outcomes, power before verdict, pairing, 0/1 tests."""
from __future__ import annotations

import math

import numpy as np
import pytest

from musiceval import stats

from musiceval.stats import intervals
from musiceval.gates import Gate, GateConfig
from musiceval.records import GateResult, ItemFailure, ItemScores, Outcome


def scores(values, *, ids=None, groups=None, metric="accuracy", condition="correct", failures=()):
    ids = ids if ids is not None else [f"i{k}" for k in range(len(values))]
    return ItemScores(metric, ids=ids, values=values, groups=groups, condition=condition, failures=failures)


@pytest.fixture
def rows():
    return []


@pytest.fixture
def gate(rows):
    return Gate(GateConfig(), sink=rows.append)


def _pair(n, shift, *, seed=0, sd=0.1):
    rng = np.random.default_rng(seed)
    old = np.clip(rng.normal(0.6, 0.2, n), 0, 1)
    new = np.clip(old + shift + rng.normal(0, sd, n), 0, 1)
    return scores(new, metric="f1"), scores(old, metric="f1")


def test_non_inferior_pass_names_both_models_in_metric_units(gate, rows):
    new, old = _pair(400, 0.0)
    r = gate.non_inferior(new, old, margin=0.03, name="f1 no regression", new_label="qwen2", old_label="qwen",
                          protocol="GTZAN", metric="f1")
    assert r.outcome is Outcome.PASS and r.ci[0] > -0.03 and r.threshold == -0.03
    assert r.detail.startswith(f"qwen2 {new.values.mean():.3f} vs qwen {old.values.mean():.3f} on GTZAN f1")
    assert r.mde is not None and r.mde < 0.03 and r.baseline == "qwen"
    assert "shape=continuous" in r.test and "non_inferior (higher is better)" in r.test
    assert [row["type"] for row in rows] == ["scores", "scores", "gate"] and rows[-1]["mde"] == r.mde


def test_non_inferior_fail_when_the_drop_exceeds_the_margin(gate):
    new, old = _pair(400, -0.10)
    r = gate.non_inferior(new, old, margin=0.03, name="drop")
    assert r.outcome is Outcome.FAIL and r.ci[1] < -0.03 and "drop 10" in r.detail


def test_non_inferior_inconclusive_when_the_interval_straddles_the_bar(gate):
    new, old = _pair(400, -0.03, sd=0.1)
    r = gate.non_inferior(new, old, margin=0.03, name="straddle")
    assert r.outcome is Outcome.INCONCLUSIVE and r.ci[0] < -0.03 < r.ci[1] and r.mde < 0.03


def test_the_interval_decides_and_the_mde_is_advice_only(gate):
    new, old = _pair(334, 0.06, sd=0.3, seed=4)
    r = gate.non_inferior(new, old, margin=0.02, name="small set", new_label="qwen2", old_label="qwen")
    # the MDE is above the margin, but the interval's lower bound clears the bar: decided
    assert r.ci[0] > -0.02 and r.mde > 0.02
    assert r.outcome is Outcome.PASS and "underpowered" not in r.detail and r.verdict in ("non-inferior", "superior")


def test_an_undecided_gate_says_how_many_items_would_decide_it_with_mde_advice(gate):
    new, old = _pair(120, 0.0, sd=0.3, seed=5)
    r = gate.non_inferior(new, old, margin=0.02, name="straddles", new_label="qwen2", old_label="qwen")
    assert r.outcome is Outcome.INCONCLUSIVE and r.ci[0] < -0.02 < r.ci[1]
    half, gap = (r.ci[1] - r.ci[0]) / 2, r.estimate + 0.02
    assert r.n_to_decide == max(121, math.ceil(120 * (half / gap) ** 2))
    assert f"about {r.n_to_decide} items" in r.detail and "MDE advice: with 120 items this gate detects drops of" in r.detail


def test_a_large_gain_is_superior_whatever_the_mde(gate):
    new, old = _pair(4096, 0.335, sd=0.4, seed=6)
    c = gate.regression(new, old, margin=0.02, name="big gain")
    assert c.non_inferior.outcome is Outcome.PASS and c.superior.outcome is Outcome.PASS and c.verdict == "superior"
    assert "superiority: PASS" in c.non_inferior.detail


def test_lower_is_better_metrics_are_turned(gate):
    rng = np.random.default_rng(1)
    old = rng.uniform(1.0, 2.0, 300)  # WER above 1: metric units, not points
    new = old - 0.2 + rng.normal(0, 0.05, 300)
    r = gate.superior(scores(new, metric="wer"), scores(old, metric="wer"), margin=0.0, name="wer better",
                      higher_is_better=False)
    assert r.outcome is Outcome.PASS and r.estimate == pytest.approx(0.2, abs=0.02)
    assert "lower is better" in r.test and f"gain {r.estimate:.3g}" in r.detail and "points" not in r.detail
    worse = gate.non_inferior(scores(old + 0.3, metric="wer"), scores(old, metric="wer"), margin=0.05,
                              name="wer worse", higher_is_better=False)
    assert worse.outcome is Outcome.FAIL


def test_superior_pass_and_not_superior(gate):
    new, old = _pair(400, 0.05)
    assert gate.superior(new, old, margin=0.0, name="better").outcome is Outcome.PASS
    same, base = _pair(400, 0.0, seed=2)
    assert gate.superior(same, base, margin=0.0, name="same").outcome is not Outcome.PASS


def test_unmatched_items_are_counted_and_named(gate):
    new = scores([1.0, 0.0, 1.0, 1.0], ids=["a", "b", "c", "n1"], failures=[ItemFailure("z", "empty")])
    old = scores([1.0, 1.0, 0.0, 0.0, 1.0], ids=["a", "b", "c", "o1", "o2"])
    r = gate.non_inferior(new, old, margin=0.05, name="join", new_label="v2", old_label="v1")
    assert r.n == 3 and r.n_failed == 1 + 3
    assert "1 only in v2: n1" in r.detail and "2 only in v1: o1, o2" in r.detail
    many = scores([1.0] * 9, ids=[f"x{k}" for k in range(9)])
    r = gate.non_inferior(many, old, margin=0.05, name="disjoint")
    assert r.outcome is Outcome.INCONCLUSIVE and r.n == 0 and "9 only in new: x0, x1, x2, x3, x4 (+4 more)" in r.detail


def test_binary_outcomes_use_tango_and_exact_mcnemar(gate):
    rng = np.random.default_rng(5)
    old = (rng.random(500) < 0.7).astype(float)
    new = np.where(rng.random(500) < 0.1, 1.0, old)
    r = gate.superior(scores(new), scores(old), margin=0.0, name="acc up")
    p, _, _ = stats.mcnemar_exact(new == 1, old == 1)
    assert "Tango score interval + exact McNemar" in r.test and "shape=binary" in r.test and r.p_value == p
    ni = gate.non_inferior(scores(new), scores(old), margin=0.02, name="acc ni")
    assert "Tango score interval and test" in ni.test
    clustered = gate.non_inferior(scores(new, groups=[f"t{k // 5}" for k in range(500)]),
                                  scores(old, groups=[f"t{k // 5}" for k in range(500)]), margin=0.02, name="acc cl")
    assert "Obuchowski clustered McNemar" in clustered.test and "shape=binary+clustered" in clustered.test


def test_tango_interval_bounds_solve_the_score_equation_against_a_numerical_mle():
    from scipy.optimize import minimize_scalar
    from scipy.stats import norm

    n10, n01, n11, n00 = 30, 12, 100, 58
    n = n10 + n01 + n11 + n00
    a = np.array([1] * n10 + [0] * n01 + [1] * n11 + [0] * n00, dtype=bool)
    b = np.array([0] * n10 + [1] * n01 + [1] * n11 + [0] * n00, dtype=bool)
    bound = intervals.tango_interval(a, b)

    def score_z(delta):  # restricted MLE of p01 by numerical maximisation of the multinomial likelihood
        def nll(p01):
            p10 = p01 + delta
            rest = 1 - p10 - p01
            if p10 <= 0 or p01 <= 0 or rest <= 0:
                return np.inf
            # p11 and p00 share the rest freely: their MLE split is proportional to n11 : n00
            return -(n10 * np.log(p10) + n01 * np.log(p01) + (n11 + n00) * np.log(rest))

        p01 = minimize_scalar(nll, bounds=(max(1e-9, -delta + 1e-9), (1 - delta) / 2 - 1e-9), method="bounded",
                              options={"xatol": 1e-12}).x
        return (n10 - n01 - n * delta) / math.sqrt(n * (2 * p01 + delta * (1 - delta)))

    z = norm.ppf(0.975)
    assert score_z(bound.low) == pytest.approx(z, abs=1e-3)
    assert score_z(bound.high) == pytest.approx(-z, abs=1e-3)


def test_skew_t_without_skew_is_the_t_interval():
    x = np.concatenate([np.linspace(-1, 1, 51), [0.0]])  # symmetric: sample skewness 0
    bound = intervals.skew_t(x)
    ref = stats.analytic_ci(x)
    assert (bound.low, bound.high) == pytest.approx((ref.low, ref.high), rel=1e-9)


def test_skew_t_moves_the_interval_with_the_skew():
    rng = np.random.default_rng(0)
    x = rng.lognormal(0, 0.5, 300)
    bound, ref = intervals.skew_t(x), stats.analytic_ci(x)
    assert bound.low > ref.low and bound.high > ref.high  # right skew: both bounds move up
    assert bound.p_value == pytest.approx(0.0, abs=1e-12) and intervals.skew_t(x, margin=10).p_value > 0.99


def test_empirical_bernstein_is_valid_for_bounded_tiny_samples():
    rng = np.random.default_rng(0)
    misses = sum(intervals.empirical_bernstein(rng.beta(0.5, 3, 10), value_range=(0, 1)).low > 0.5 / 3.5
                 for _ in range(2000))
    assert misses / 2000 <= 0.025


def test_mde_matches_simulated_power():
    rng = np.random.default_rng(0)
    sd, n = 0.3, 200
    mde = stats.minimum_detectable_effect(sd, n)
    hits = 0
    for _ in range(1000):
        d = rng.normal(mde, sd, n)
        hits += stats.analytic_ci(d).low > 0
    assert hits / 1000 == pytest.approx(0.8, abs=0.04)


def test_mde_cluster_adjusted_and_required_items():
    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(50), 6)
    d = rng.normal(0, 0.2, 50)[groups] + rng.normal(0, 0.2, 300)
    flat = stats.minimum_detectable_effect(d)
    clustered = stats.minimum_detectable_effect(d, clusters=groups)
    deff = stats.design_effect(d, groups)
    assert deff > 2 and clustered == pytest.approx(flat * math.sqrt(deff))
    n = stats.required_items(d, 0.05, groups)
    assert stats.minimum_detectable_effect(d, n, groups) <= 0.05 < stats.minimum_detectable_effect(d, n - 1, groups)
    with pytest.raises(ValueError, match="pass n"):
        stats.minimum_detectable_effect(0.3)


def test_benjamini_hochberg_and_adjust_match_statsmodels_formulae():
    p = [0.01, 0.04, 0.03, 0.005, 0.2]
    # reference: BH adjusted p_(i) = min_{j >= i} m p_(j) / j
    order = np.argsort(p)
    m = len(p)
    ref = np.empty(m)
    running = 1.0
    for rank in range(m, 0, -1):
        k = order[rank - 1]
        running = min(running, m * p[k] / rank)
        ref[k] = running
    assert stats.benjamini_hochberg(p) == pytest.approx(ref)
    assert stats.adjust([0.01, None, 0.04], "holm") == pytest.approx([0.02, None, 0.04])
    assert stats.adjust(p, "bh") == pytest.approx(ref.tolist())
    with pytest.raises(ValueError, match="holm"):
        stats.adjust(p, "bonferroni")


def test_gate_result_rows_without_the_new_fields_still_load():
    old_row = dict(name="g", outcome=Outcome.PASS, estimate=0.1, ci=(0.0, 0.2), p_value=0.01, n=10, threshold=0.0,
                   test="t")
    r = GateResult(**old_row)
    assert r.mde is None and r.baseline == ""


def test_margin_must_be_nonnegative(gate):
    new, old = _pair(50, 0.0)
    with pytest.raises(ValueError, match="margin must be"):
        gate.non_inferior(new, old, margin=-0.1, name="neg")


def test_single_item_and_identical_runs(gate):
    one = gate.non_inferior(scores([0.5]), scores([0.4]), margin=0.05, name="one item")
    assert one.outcome is Outcome.INCONCLUSIVE and math.isinf(one.mde)
    assert "cannot detect drops of any size" in one.detail
    same = scores(np.linspace(0.1, 0.9, 50))
    r = gate.non_inferior(same, same, margin=0.01, name="identical")
    assert r.outcome is Outcome.PASS and r.estimate == 0 and r.mde == 0 and r.ci == (0.0, 0.0)
    assert "exact, identical on every item" in r.test
    # identical exact proportions (a parse rate of 1.000 against 1.000 on 24 items) are decided exactly
    ones = scores([1.0] * 24)
    c = gate.regression(ones, ones, margin=0.02, name="parse rate")
    assert c.non_inferior.outcome is Outcome.PASS and c.superior.outcome is Outcome.FAIL and c.verdict == "non-inferior"
