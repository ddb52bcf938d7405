"""Statistics: reference implementations (scipy) on fixed vectors, and hypothesis properties of
the gate decision rule (false-PASS rate under the null, power, order invariance, shrinking CIs)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from musiceval import stats
from musiceval.records import Outcome

finite = st.floats(min_value=-5, max_value=5, allow_nan=False, allow_infinity=False)


# ----------------------------------------------------------------------------- reference values


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_ci_matches_scipy_bootstrap(method):
    x = np.random.default_rng(3).gamma(2.0, 1.0, size=120)  # skewed, where BCa matters
    ours = stats.paired_bootstrap_ci(x, n_resamples=20_000, seed=0, method=method)
    ref = scipy.stats.bootstrap((x,), np.mean, n_resamples=20_000, method="BCa" if method == "bca" else "percentile",
                                random_state=1).confidence_interval
    se = x.std(ddof=1) / math.sqrt(x.size)
    # two Monte Carlo estimates of the same quantity: agree to a small fraction of the SE
    assert ours.low == pytest.approx(ref.low, abs=0.06 * se)
    assert ours.high == pytest.approx(ref.high, abs=0.06 * se)


def test_bca_shifts_the_interval_for_skewed_data():
    x = np.random.default_rng(3).exponential(1.0, size=60)
    pct = stats.paired_bootstrap_ci(x, seed=0, method="percentile")
    bca = stats.paired_bootstrap_ci(x, seed=0, method="bca")
    assert bca.high > pct.high and bca.low > pct.low  # right skew moves BCa up


def test_bootstrap_means_are_centred_with_the_standard_error():
    x = np.random.default_rng(0).normal(2.0, 1.0, size=2000)
    reps = stats.bootstrap_means(x, n_resamples=4000, seed=1)
    assert reps.mean() == pytest.approx(x.mean(), abs=0.003)
    assert reps.std() == pytest.approx(x.std() / math.sqrt(x.size), rel=0.06)


def test_clustered_bootstrap_is_wider_when_clusters_are_correlated():
    rng = np.random.default_rng(0)
    cluster_effect = np.repeat(rng.normal(0, 1, 40), 10)
    x = cluster_effect + rng.normal(0, 0.2, 400)
    groups = np.repeat(np.arange(40), 10)
    flat = stats.paired_bootstrap_ci(x, seed=0)
    clustered = stats.paired_bootstrap_ci(x, groups=groups, seed=0)
    assert (clustered.high - clustered.low) > 2 * (flat.high - flat.low)


def test_analytic_ci_matches_scipy_t_interval():
    x = np.random.default_rng(1).normal(0.3, 1, 50)
    ours = stats.analytic_ci(x)
    ref = scipy.stats.t.interval(0.95, df=49, loc=x.mean(), scale=scipy.stats.sem(x))
    assert (ours.low, ours.high) == pytest.approx(ref, rel=1e-12)


def test_cluster_robust_se_reduces_to_paired_se_with_singleton_clusters():
    x = np.random.default_rng(2).normal(size=30)
    assert stats.cluster_robust_se(x, groups=range(30)) == pytest.approx(stats.paired_standard_error(x), rel=1e-12)


def test_cluster_robust_se_matches_the_cr1_formula():
    x = np.array([1.0, 2.0, 0.5, 3.0, 2.5, 4.0])
    g = ["a", "a", "b", "b", "c", "c"]
    r = x - x.mean()
    sums = np.array([r[0] + r[1], r[2] + r[3], r[4] + r[5]])
    expected = math.sqrt(3 / 2 * np.sum(sums**2) / 36)
    assert stats.cluster_robust_se(x, g) == pytest.approx(expected, rel=1e-12)


def test_clopper_pearson_matches_scipy():
    for k, n in [(0, 10), (3, 10), (10, 10), (130, 200)]:
        ours = stats.clopper_pearson(k, n, 0.05)
        ref = scipy.stats.binomtest(k, n).proportion_ci(0.95, method="exact")
        assert (ours.low, ours.high) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_binomial_test_matches_scipy():
    for k, n, p0 in [(60, 200, 0.25), (50, 200, 0.25), (0, 5, 0.5), (5, 5, 0.5)]:
        ref = scipy.stats.binomtest(k, n, p0, alternative="greater").pvalue
        assert stats.binomial_test_greater(k, n, p0) == pytest.approx(ref, rel=1e-10)


def test_mcnemar_exact_counts_discordant_pairs_and_matches_binomtest():
    a = np.array([1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0], dtype=bool)
    b = np.array([0, 0, 0, 0, 0, 1, 1, 1, 0, 1, 0, 0], dtype=bool)
    p, a_only, b_only = stats.mcnemar_exact(a, b)
    assert (a_only, b_only) == (5, 1)
    assert p == pytest.approx(scipy.stats.binomtest(5, 6, 0.5, alternative="greater").pvalue)
    assert stats.mcnemar_exact(a, a)[0] == 1.0


def test_sign_flip_exact_enumeration_matches_hand_count():
    # units 3, 1, -1: 8 sign patterns; sums >= 3 are (3,1,-1)=3, (3,1,1)=5, (3,-1,1)=3 -> 3/8
    assert stats.sign_flip_test([3.0, 1.0, -1.0]) == pytest.approx(3 / 8)


def test_sign_flip_monte_carlo_agrees_with_paired_t_test():
    x = np.random.default_rng(5).normal(0.2, 1, 80)
    p = stats.sign_flip_test(x, n_resamples=20_000, seed=0)
    ref = scipy.stats.ttest_1samp(x, 0, alternative="greater").pvalue
    assert p == pytest.approx(ref, abs=0.02)


def test_holm_matches_the_step_down_definition():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005, 3*0.01, 2*0.03, 1*0.04 with running max
    assert stats.holm(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_permutation_null_and_p_value():
    truth = np.array([0, 1, 2, 3] * 10)
    pred = truth.copy()
    null = stats.permutation_null(lambda perm: float(np.mean(pred == truth[perm])), truth.size, n_permutations=500, seed=0)
    assert null.mean() == pytest.approx(0.25, abs=0.03)
    assert stats.permutation_p_value(1.0, null) == pytest.approx(1 / 501)


def test_decide_rule():
    assert stats.decide((0.01, 0.2), 0.0) is Outcome.PASS
    assert stats.decide((-0.3, -0.01), 0.0) is Outcome.FAIL
    assert stats.decide((-0.1, 0.1), 0.0) is Outcome.INCONCLUSIVE
    assert stats.decide((0.05, 0.2), 0.1) is Outcome.INCONCLUSIVE


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [[1.0, 2.0]]])
def test_bad_input_names_the_problem(bad):
    with pytest.raises(ValueError, match="diff"):
        stats.paired_bootstrap_ci(bad)


# ----------------------------------------------------------------------------- properties


def test_false_pass_rate_under_the_null_stays_at_or_below_alpha():
    """Under a true null (mean difference 0) a PASS is a false positive; its rate over many
    simulated runs must be <= alpha/2 (one side of a two-sided 95% interval), with a
    binomial tolerance for the finite number of runs."""
    rng = np.random.default_rng(11)
    runs, passes = 400, 0
    for k in range(runs):
        diff = rng.standard_t(df=5, size=40)  # heavy tails, still mean 0
        ci = stats.paired_bootstrap_ci(diff, n_resamples=1000, seed=k)
        passes += stats.decide(ci, 0.0) is Outcome.PASS
    # alpha/2 = 0.025; allow 3 binomial SDs above it
    assert passes / runs <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / runs)


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=30, max_value=200), st.integers(min_value=0, max_value=10_000))
def test_large_true_effect_passes(n, seed):
    diff = np.random.default_rng(seed).normal(1.0, 0.5, size=n)
    assert stats.decide(stats.paired_bootstrap_ci(diff, n_resamples=500, seed=seed), 0.0) is Outcome.PASS


@settings(max_examples=25, deadline=None)
@given(st.lists(finite, min_size=5, max_size=60), st.integers(min_value=0, max_value=2**31))
def test_interval_is_invariant_to_item_order(values, seed):
    x = np.array(values)
    perm = np.random.default_rng(seed).permutation(x.size)
    for method in ("percentile", "bca"):
        a = stats.paired_bootstrap_ci(x, n_resamples=300, seed=7, method=method)
        b = stats.paired_bootstrap_ci(x[perm], n_resamples=300, seed=7, method=method)
        assert (a.low, a.high) == pytest.approx((b.low, b.high), abs=1e-9)
    assert stats.sign_flip_test(x, n_resamples=300, seed=3) == pytest.approx(stats.sign_flip_test(x[perm], n_resamples=300, seed=3))


@settings(max_examples=20, deadline=None)
@given(st.lists(finite, min_size=5, max_size=60), st.integers(min_value=0, max_value=2**31))
def test_clustered_interval_is_invariant_to_item_order(values, seed):
    x = np.array(values)
    groups = np.arange(x.size) // 3
    perm = np.random.default_rng(seed).permutation(x.size)
    a = stats.paired_bootstrap_ci(x, groups=groups, n_resamples=300, seed=7)
    b = stats.paired_bootstrap_ci(x[perm], groups=groups[perm], n_resamples=300, seed=7)
    assert (a.low, a.high) == pytest.approx((b.low, b.high), abs=1e-9)


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=0, max_value=10_000))
def test_intervals_shrink_with_n(seed):
    rng = np.random.default_rng(seed)
    widths = []
    for n in (50, 200, 800):
        ci = stats.paired_bootstrap_ci(rng.normal(0.1, 1, n), n_resamples=1000, seed=seed)
        widths.append(ci.high - ci.low)
    assert widths[0] > widths[1] > widths[2]


@settings(max_examples=30, deadline=None)
@given(st.lists(finite, min_size=2, max_size=40))
def test_interval_contains_the_estimate_and_is_ordered(values):
    x = np.array(values)
    ci = stats.paired_bootstrap_ci(x, n_resamples=300, seed=0, method="percentile")
    assert ci.low <= ci.high
    assert ci.low - 1e-9 <= x.mean() <= ci.high + 1e-9 or np.ptp(x) > 0


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=30))
def test_holm_adjusted_values_are_monotone_and_bounded(p):
    adj = stats.holm(p)
    assert np.all(adj >= np.asarray(p) - 1e-15) and np.all(adj <= 1)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(adj[order]) >= -1e-15)
