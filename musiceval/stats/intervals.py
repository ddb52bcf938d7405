"""Calibrated intervals chosen by the shape of the data (docs/regression-gates.md, "Calibration").

The bootstrap BCa interval of :mod:`musiceval.stats` under-covers one tail of skewed,
zero-inflated per-item scores (BLEU/CIDEr-like) and of clustered data; measured by
``benchmarks/bench_calibration.py``. Gates therefore pick the interval by data shape
(:func:`classify`), and record the shape in ``GateResult.test``. Whether the values are 0/1
outcomes (``binary``) and the range an interval is bounded by are the metric's declaration
(``scale=``, :mod:`musiceval.stats.scales`), passed by every gate of the suite; without one they
are read from the values (0/1 values, values in [0, 1]), which mistakes seconds that happen to be
0 or 1 for a proportion:

========================  =====================================================================
shape                     interval / p-value
========================  =====================================================================
``binary``                one sample: Clopper-Pearson + exact binomial [6]_; paired: Tango's
                          score interval for ``p10 - p01`` [2]_, exact McNemar p-value at margin 0
``binary+clustered``      one sample: Clopper-Pearson on the effective sample size ``n / deff``
                          [7]_; paired: Obuchowski's cluster-adjusted test [3]_, the skew-corrected
                          t below on cluster pseudo-values (CR1 variance, G-1 dof)
``continuous``            Hall's skewness-corrected t [1]_ (second-order correct one-sided bounds),
                          at alpha/2 when ``|skewness| >`` :data:`SKEW_LIMIT`
``continuous+clustered``  the same on cluster pseudo-values (CR1 variance, G-1 dof), at alpha/2
                          with fewer than :data:`FEW_CLUSTERS` clusters
``tiny-n``                fewer than :data:`TINY_N` units: the empirical Bernstein bound on the
                          declared range (valid at any n), else the skew-corrected t at alpha/2
``...+few-clusters``      paired differences (0/1 or continuous) in fewer than
                          :data:`SIGN_FLIP_CLUSTERS` clusters: the cluster sign-flip
                          (randomization) test of Fisher [9]_ over cluster totals, exact up to
                          :data:`EXACT_SIGN_PATTERNS` clusters, and the interval that inverts it
                          (:func:`cluster_sign_flip`, [11]_ [12]_ [13]_), at alpha/2
========================  =====================================================================

Every interval of a metric with a known range stays in it (a proportion, F1, BLEU in [0, 1]; a
paired difference in ``[low - high, high - low]``), and an interval of a proportion never has zero
width: a proportion of 39 of 39 is not known to be exactly 1 (Bowyer et al. [8]_). Values with no
spread on a known range use the empirical Bernstein bound, whose width is positive at any n.

All functions here are deterministic (no resampling; the Monte-Carlo sign patterns of
:func:`cluster_sign_flip` beyond 16 clusters are seeded): the same data give the same interval.

References
----------
.. [1] Hall, P. (1992). On the removal of skewness by transformation. JRSS-B 54(1), 221-228;
       as used for the mean by Zhou, X.-H. & Dinh, P. (2005), Biostatistics 6(2), 300-310.
.. [2] Tango, T. (1998). Equivalence test and confidence interval for the difference in
       proportions for the paired-sample design. Statistics in Medicine 17, 891-908.
.. [3] Obuchowski, N. A. (1998). On the comparison of correlated proportions for clustered
       data. Statistics in Medicine 17, 1495-1507.
.. [5] Maurer, A. & Pontil, M. (2009). Empirical Bernstein bounds and sample variance penalization.
       COLT 2009, Theorem 4.
.. [4] Cameron, A. C. & Miller, D. L. (2015). A practitioner's guide to cluster-robust inference.
.. [6] Clopper, C. J. & Pearson, E. S. (1934). The use of confidence or fiducial limits illustrated
       in the case of the binomial. Biometrika 26(4), 404-413.
.. [7] Korn, E. L. & Graubard, B. I. (1998). Confidence intervals for proportions with small
       expected number of positive counts estimated from survey data. Survey Methodology 24(2).
.. [8] Bowyer, S., Aitchison, L. & Ivanova, D. (2025). Position: Don't use the CLT in LLM evals
       with fewer than a few hundred datapoints. ICML 2025.
.. [9] Fisher, R. A. (1935). The Design of Experiments, ch. III (Darwin's paired plants: the
       randomization test of paired differences by their signs).
.. [10] Good, P. I. (2005). Permutation, Parametric and Bootstrap Tests of Hypotheses, 3rd ed.,
        Springer (Monte-Carlo randomization tests, confidence intervals by inverting them).
.. [11] Canay, I. A., Romano, J. P. & Shaikh, A. M. (2017). Randomization tests under an
        approximate symmetry assumption. Econometrica 85(3), 1013-1030.
.. [12] Cameron, A. C., Gelbach, J. B. & Miller, D. L. (2008). Bootstrap-based improvements for
        inference with clustered errors. Review of Economics and Statistics 90(3), 414-427.
.. [13] Hartigan, J. A. (1969). Using subsample values as typical values. JASA 64(328), 1303-1317.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from musiceval.stats.scales import Scale

#: fewer analysis units (items, or clusters when items share a track) than this is "tiny-n"
TINY_N = 20
#: |sample skewness| of the units above which the skew-corrected t runs at alpha/2
SKEW_LIMIT = 2.0
#: clustered data with fewer clusters than this run at alpha/2 (CR1 is liberal with few clusters)
FEW_CLUSTERS = 100
#: paired differences clustered in fewer clusters than this use the cluster sign-flip test at
#: alpha/2 (:func:`cluster_sign_flip`); chosen from the calibration in docs/regression-gates.md
#: ("Few clusters"): below it the CR1 units are a tiny-n sample, at and above it the two agree
SIGN_FLIP_CLUSTERS = TINY_N
#: up to this many clusters the sign-flip test enumerates all 2^C sign patterns
EXACT_SIGN_PATTERNS = 16
#: beyond :data:`EXACT_SIGN_PATTERNS` clusters, this many seeded Monte-Carlo sign patterns
SIGN_FLIP_DRAWS = 19_999


@dataclass(frozen=True)
class Bound:
    """A two-sided ``1 - alpha`` interval with the matching one-sided p-value against a margin."""

    low: float
    high: float
    p_value: float | None
    method: str
    shape: str


def has_clusters(groups: Sequence[object] | None) -> bool:
    return groups is not None and len(set(map(str, groups))) < len(groups)


def is_binary(*values: np.ndarray) -> bool:
    return all(v.size > 0 and bool(np.all((v == 0) | (v == 1))) for v in values)


def classify(*values: np.ndarray, groups: Sequence[object] | None = None, paired: bool = False,
             scale: Scale | None = None) -> str:
    """The shape of the data a gate sees: ``binary`` / ``continuous``, ``+clustered`` when items
    share a group, or ``tiny-n`` when there are fewer than :data:`TINY_N` units (items or clusters).

    ``binary`` or ``continuous`` is the metric's declaration (``scale``, :mod:`musiceval.stats.scales`)
    when one is given; without one it is read from the values (``binary`` when every value is 0 or 1),
    which mistakes seconds that happen to be 0 or 1 for a proportion. For paired data pass both
    score arrays (and the scale of each). With
    ``paired=True``, clustered data in fewer than :data:`SIGN_FLIP_CLUSTERS` clusters are
    ``binary+few-clusters`` / ``continuous+few-clusters`` (the cluster sign-flip test decides them).
    """
    clustered = has_clusters(groups)
    units = len(set(map(str, groups))) if clustered else (values[0].size if values else 0)
    binary = scale.binary if scale is not None else is_binary(*values)
    kind = "binary" if binary else "continuous"
    if paired and clustered and units < SIGN_FLIP_CLUSTERS:
        return kind + "+few-clusters"
    if units < TINY_N:
        return "tiny-n" if kind == "continuous" else kind + ("+clustered" if clustered else "")
    return kind + ("+clustered" if clustered else "")


def cluster_units(x: np.ndarray, groups: Sequence[object] | None) -> np.ndarray:
    """Analysis units whose plain mean and sample variance give the item-level mean and its CR1
    variance: ``z_g = xbar + G (S_g - n_g xbar) / N`` (one unit per item without groups)."""
    if not has_clusters(groups):
        return np.asarray(x, dtype=float)
    _, codes = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)  # type: ignore[union-attr]
    sums = np.bincount(codes, weights=x)
    sizes = np.bincount(codes).astype(float)
    xbar = float(x.mean())
    return xbar + len(sums) * (sums - sizes * xbar) / x.size


def _cbrt(v: float) -> float:
    return math.copysign(abs(v) ** (1.0 / 3.0), v)


def skew_t(
    x: Sequence[float] | np.ndarray,
    *,
    groups: Sequence[object] | None = None,
    alpha: float = 0.05,
    margin: float = 0.0,
    tiny_n: int = TINY_N,
    scale: Scale | None = None,
) -> Bound:
    """Hall's (1992) skewness-corrected t interval for the mean of ``x`` (clustered via CR1 units).

    With ``S = (xbar - mu) / s`` and sample skewness ``g``, the statistic
    ``sqrt(n) * (S + g S^2 / 3 + g^2 S^3 / 27 + g / (6 n))`` is t-distributed to second order
    (``n - 1`` dof; ``G - 1`` on cluster units). The transformation is monotone and inverted in
    closed form, so the interval is ``mu in [xbar - s g^-1(q / sqrt n), xbar - s g^-1(-q / sqrt n)]``.
    The p-value is the one-sided ``P(mean > margin)`` test from the same statistic, so
    ``low > margin`` exactly when ``p < alpha / 2``.
    """
    from scipy.special import stdtr, stdtrit  # Student's t cdf and quantile (scipy.stats.t calls these)

    x = np.asarray(x, dtype=float)
    units = cluster_units(x, groups)
    n = units.size
    clustered = has_clusters(groups)
    shape = classify(x, groups=groups, scale=scale)
    label = "skew-corrected t (Hall 1992" + (", CR1 cluster units)" if clustered else ")")
    xbar = float(x.mean())
    if n < 2:
        return Bound(-math.inf, math.inf, None, label, shape)
    s = float(units.std(ddof=1))
    if s == 0:
        p = 0.0 if xbar > margin else 1.0
        return Bound(xbar, xbar, p, label, shape)
    gamma = float(np.mean((units - units.mean()) ** 3) / units.std(ddof=0) ** 3)
    level, why = alpha, []
    if n < tiny_n:
        why.append(f"tiny n={n}")
    if abs(gamma) > SKEW_LIMIT:
        why.append(f"skewness {gamma:.1f}")
    if clustered and n < FEW_CLUSTERS:
        why.append(f"{n} clusters")
    if why:  # second-order correction not enough: halve the level (measured, docs/regression-gates.md)
        level = alpha / 2
        label += f" at alpha/2 ({', '.join(why)})"

    def g(stat: float) -> float:
        if abs(gamma) < 1e-12:
            return stat
        return ((1 + gamma * stat / 3) ** 3 - 1) / gamma + gamma / (6 * n)

    def g_inv(t: float) -> float:
        if abs(gamma) < 1e-12:
            return t
        return 3 / gamma * (_cbrt(1 + gamma * (t - gamma / (6 * n))) - 1)

    q = float(stdtrit(n - 1, 1 - level / 2))
    low = xbar - s * g_inv(q / math.sqrt(n))
    high = xbar - s * g_inv(-q / math.sqrt(n))
    stat = math.sqrt(n) * g((xbar - margin) / s)
    p = float(stdtr(n - 1, -stat))
    if why:
        p = min(1.0, 2 * p)
    return Bound(float(low), float(high), p, label, shape)


# ----------------------------------------------------------------------------- paired 0/1


def _tango_z(n10: int, n01: int, n: int, delta: float) -> float:
    """Tango's (1998) score statistic for ``H0: p10 - p01 = delta`` (``n10``: only the first
    system right; ``n01``: only the second right)."""
    if abs(delta) >= 1:
        return math.copysign(math.inf, (n10 - n01) / n - delta) if (n10 - n01) / n != delta else 0.0
    a = 2.0 * n
    b = -n10 - n01 + (2.0 * n - n10 + n01) * delta
    c = -n01 * delta * (1 - delta)
    disc = max(b * b - 4 * a * c, 0.0)
    p01 = (-b + math.sqrt(disc)) / (2 * a)  # restricted MLE of p01 under the null
    var = n * (2 * p01 + delta * (1 - delta))
    num = n10 - n01 - n * delta
    if var <= 0:
        return 0.0 if num == 0 else math.copysign(math.inf, num)
    return num / math.sqrt(var)


def tango_interval(a_correct: np.ndarray, b_correct: np.ndarray, *, alpha: float = 0.05, margin: float = 0.0) -> Bound:
    """Tango's score interval for the paired difference of proportions ``P(a) - P(b)`` [2]_,
    inverted by bisection; the p-value is the one-sided score test of ``diff > margin`` (the exact
    McNemar p-value when ``margin == 0``, which is the exact conditional test of the same null)."""
    from scipy.special import ndtr, ndtri  # the normal cdf and quantile (scipy.stats.norm calls these)

    from musiceval.stats.exact import mcnemar_exact

    a = np.asarray(a_correct, dtype=bool)
    b = np.asarray(b_correct, dtype=bool)
    n = a.size
    n10, n01 = int(np.sum(a & ~b)), int(np.sum(~a & b))
    z = float(ndtri(1 - alpha / 2))
    est = (n10 - n01) / n

    def solve(target: float, lo: float, hi: float) -> float:
        # _tango_z is decreasing in delta; find delta with z(delta) = target
        for _ in range(80):
            mid = (lo + hi) / 2
            if _tango_z(n10, n01, n, mid) > target:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    eps = 1e-12
    low = solve(z, -1 + eps, est) if _tango_z(n10, n01, n, -1 + eps) > z else -1.0
    high = solve(-z, est, 1 - eps) if _tango_z(n10, n01, n, 1 - eps) < -z else 1.0
    if margin == 0:
        p, _, _ = mcnemar_exact(a, b)
        method = "Tango score interval + exact McNemar"
    else:
        p = float(ndtr(-_tango_z(n10, n01, n, margin)))
        method = "Tango score interval and test"
    return Bound(float(low), float(high), float(p), method, "binary")


def paired_interval(
    new: np.ndarray, old: np.ndarray, *, groups: Sequence[object] | None = None, alpha: float = 0.05,
    margin: float = 0.0, scale: Scale | None = None,
) -> Bound:
    """The calibrated interval for ``mean(new - old)`` chosen by :func:`classify` (see module table).

    ``scale`` is the metric's declaration (:mod:`musiceval.stats.scales`): 0/1 outcomes get Tango's
    interval / McNemar, a known range bounds the difference (``[low - high, high - low]``); without
    one both are read from the values (0/1 values, values in [0, 1]).

    With fewer than :data:`SIGN_FLIP_CLUSTERS` clusters: the cluster sign-flip test and the
    interval that inverts it (:func:`cluster_sign_flip`), at alpha/2 like every few-cluster rule
    here (its p-value doubled, so ``low > margin`` exactly when ``p <= alpha / 2``). The test is
    exact when the cluster totals are symmetric under the null; skewed cluster effects make it
    liberal at alpha (measured in docs/regression-gates.md, "Few clusters"), which the halved
    level absorbs. With fewer than 7 clusters (``2^C < 4 / alpha``) no shift can be rejected.
    """
    if scale is not None:
        scale.check(new, old)
    diff_range = _difference_range(scale, new, old)
    shape = classify(new, old, groups=groups, paired=True, scale=scale)
    if shape.endswith("+few-clusters"):
        bound = cluster_sign_flip(new - old, groups,  # type: ignore[arg-type]
                                  alpha=alpha / 2, margin=margin, value_range=_finite(diff_range), shape=shape)
        p = None if bound.p_value is None else min(1.0, 2 * bound.p_value)
        return Bound(bound.low, bound.high, p, bound.method + " at alpha/2 (few clusters)", shape)
    shape = classify(new, old, groups=groups, scale=scale)
    if shape == "binary":
        return tango_interval(new == 1, old == 1, alpha=alpha, margin=margin)
    if shape == "tiny-n" and _finite(diff_range):
        return empirical_bernstein(new - old, value_range=diff_range, alpha=alpha, margin=margin,  # type: ignore[arg-type]
                                   scale=scale.difference() if scale is not None else None)
    bound = skew_t(new - old, groups=groups, alpha=alpha, margin=margin,
                   scale=scale.difference() if scale is not None else None)
    method = bound.method
    if shape == "binary+clustered":
        method = "Obuchowski clustered McNemar via " + method
    bound = Bound(bound.low, bound.high, bound.p_value, method, shape)
    return _clipped(bound, diff_range) if diff_range is not None else bound


def one_sample_interval(
    x: np.ndarray, *, groups: Sequence[object] | None = None, alpha: float = 0.05, margin: float = 0.0,
    scale: Scale | None = None,
) -> Bound:
    """The calibrated interval for ``mean(x)``: :func:`proportion_interval` for 0/1 outcomes
    (clustered or not), the empirical Bernstein bound for tiny n or no spread on a known range,
    the skew-corrected t otherwise (clustered via CR1 units, clipped to the metric's known range).

    ``scale`` is the metric's declaration (:mod:`musiceval.stats.scales`); without one, 0/1 values
    are taken for outcomes and values in [0, 1] for a metric known to lie there."""
    if scale is not None:
        scale.check(x)
    shape = classify(x, groups=groups, scale=scale)
    if shape.startswith("binary"):
        return proportion_interval(x, groups=groups, alpha=alpha, margin=margin, scale=scale)
    value_range = _value_range(scale, x)
    known = _finite(value_range)
    if known and (shape == "tiny-n" or float(np.ptp(x)) == 0.0):
        return empirical_bernstein(x, value_range=known, alpha=alpha, margin=margin, scale=scale)
    bound = skew_t(x, groups=groups, alpha=alpha, margin=margin, scale=scale)
    return _clipped(bound, value_range) if value_range is not None else bound


def _value_range(scale: Scale | None, *values: np.ndarray) -> tuple[float, float] | None:
    """The range a mean of the values cannot leave: the declared one (either end may be infinite),
    else [0, 1] when every value lies there, else None."""
    if scale is not None:
        return (scale.low, scale.high) if math.isfinite(scale.low) or math.isfinite(scale.high) else None
    return (0.0, 1.0) if _unit_range(*values) else None


def _difference_range(scale: Scale | None, *values: np.ndarray) -> tuple[float, float] | None:
    """The range of a mean paired difference: ``[low - high, high - low]`` of the declared range,
    else [-1, 1] when every value lies in [0, 1], else None."""
    if scale is not None:
        return _value_range(scale.difference())
    return (-1.0, 1.0) if _unit_range(*values) else None


def _finite(value_range: tuple[float, float] | None) -> tuple[float, float] | None:
    """``value_range`` when both of its ends are known (what a bounded interval needs), else None."""
    if value_range is None or not (math.isfinite(value_range[0]) and math.isfinite(value_range[1])):
        return None
    return value_range


def proportion_interval(
    x: np.ndarray, *, groups: Sequence[object] | None = None, alpha: float = 0.05, margin: float = 0.0,
    scale: Scale | None = None,
) -> Bound:
    """Clopper-Pearson interval and exact binomial p-value (``P(mean > margin)``) for a proportion
    of 0/1 outcomes [6]_; with clusters, on the effective sample size ``n / deff`` (Korn and
    Graubard [7]_), ``deff`` the CR1 variance over the binomial one (at least 1), and ``deff = n / G``
    (as if every cluster were one item) when no outcome varies or there is one cluster. The interval lies in [0, 1] and
    has positive width at every n, unlike a normal or t interval (Bowyer et al. [8]_)."""
    from scipy.special import betainc, betaincinv  # betaincinv is the beta quantile scipy.stats.beta.ppf calls

    x = np.asarray(x, dtype=float)
    n, p_hat = x.size, float(x.mean())
    clustered = has_clusters(groups)
    n_eff = float(n)
    if clustered:
        n_clusters = len(set(map(str, groups)))  # type: ignore[arg-type]
        binomial_var = p_hat * (1 - p_hat) / n
        if binomial_var > 0 and n_clusters > 1:
            units = cluster_units(x, groups)
            deff = max(1.0, float(units.var(ddof=1)) / units.size / binomial_var)
        else:  # no outcome varies, or one cluster: as if every cluster were one item
            deff = n / n_clusters
        n_eff = n / deff
    k = p_hat * n_eff
    low = 0.0 if k <= 0 else float(betaincinv(k, n_eff - k + 1, alpha / 2))
    high = 1.0 if k >= n_eff else float(betaincinv(k + 1, n_eff - k, 1 - alpha / 2))
    if margin <= 0:
        p = 0.0 if k > 0 else 1.0
    elif margin >= 1 or k <= 0:
        p = 1.0
    else:  # P(X >= k) for X ~ Bin(n_eff, margin), continuous in k and n_eff
        p = float(betainc(k, n_eff - k + 1, margin))
    method = "exact binomial test + Clopper-Pearson CI"
    if clustered:
        method += f" on the effective sample size {n_eff:.0f} of {n} (clustered, Korn-Graubard)"
    return Bound(low, high, p, method, classify(x, groups=groups, scale=scale))


def _clipped(bound: Bound, value_range: tuple[float, float]) -> Bound:
    """``bound`` restricted to the metric's known range (a mean cannot leave it; an infinite end
    restricts nothing)."""
    return Bound(max(bound.low, value_range[0]), min(bound.high, value_range[1]), bound.p_value, bound.method, bound.shape)


def _unit_range(*values: np.ndarray) -> bool:
    """All values in [0, 1] (accuracy, F1, BLEU...): the metric's range is known."""
    return all(v.size > 0 and float(v.min()) >= 0 and float(v.max()) <= 1 for v in values)


def _bernstein_radius(var: float, n: int, width: float, delta: float) -> float:
    return math.sqrt(2 * var * math.log(2 / delta) / n) + 7 * width * math.log(2 / delta) / (3 * (n - 1))


def empirical_bernstein(
    x: Sequence[float] | np.ndarray, *, value_range: tuple[float, float], alpha: float = 0.05, margin: float = 0.0,
    scale: Scale | None = None,
) -> Bound:
    """Finite-sample interval for the mean of values known to lie in ``value_range``:
    ``xbar -/+ (sqrt(2 V log(2/d) / n) + 7 R log(2/d) / (3 (n - 1)))`` with ``d = alpha / 2`` per
    side, valid for any distribution on the range at any n (used for tiny n, where no
    asymptotic interval is calibrated) [5]_. The p-value is the smallest ``d`` whose bound clears
    ``margin`` (found by bisection)."""
    x = np.asarray(x, dtype=float)
    n = x.size
    width = float(value_range[1] - value_range[0])
    shape = classify(x, scale=scale)
    label = f"empirical Bernstein bound (values in [{value_range[0]:g}, {value_range[1]:g}], tiny n={n})"
    if n < 2:
        return Bound(-math.inf, math.inf, None, label, shape)
    var = float(x.var(ddof=1))
    xbar = float(x.mean())
    r = _bernstein_radius(var, n, width, alpha / 2)
    lo_d, hi_d = 1e-12, 1.0
    if xbar - _bernstein_radius(var, n, width, hi_d) <= margin:
        p = 1.0
    else:
        for _ in range(60):
            mid = math.sqrt(lo_d * hi_d)
            if xbar - _bernstein_radius(var, n, width, mid) > margin:
                hi_d = mid
            else:
                lo_d = mid
        p = hi_d
    return Bound(max(xbar - r, value_range[0]), min(xbar + r, value_range[1]), p, label, shape)


# ----------------------------------------------------------------------------- few clusters


def cluster_sums(x: np.ndarray, groups: Sequence[object]) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster sums and sizes of ``x`` in the order of the sorted cluster labels, summed in a
    fixed order (bit-identical for any order of the items)."""
    if len(groups) != len(x):
        raise ValueError(f"groups has {len(groups)} labels for {len(x)} values")
    _, codes = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)
    order = np.lexsort((x, codes))
    return np.bincount(codes[order], weights=x[order]), np.bincount(codes).astype(float)


@functools.lru_cache(maxsize=8)
def sign_patterns(n_clusters: int, *, draws: int = SIGN_FLIP_DRAWS, seed: int = 0) -> tuple[np.ndarray, int]:
    """The sign patterns of a cluster sign-flip test, as a 0/1 matrix of *flipped* clusters
    (one row per pattern, the identity left out; read-only, cached) and the size ``M`` of the
    randomization distribution, the identity included.

    Up to :data:`EXACT_SIGN_PATTERNS` clusters: all ``2^C - 1`` non-identity patterns, ``M = 2^C``
    (the exact randomization distribution). Beyond: ``draws`` patterns drawn uniformly with
    ``numpy.random.default_rng(seed)``, ``M = draws + 1``; the test with
    ``p = (1 + #{T* >= T}) / (1 + draws)`` is still exact (the observed pattern is exchangeable
    with the drawn ones under the null; Good [10]_), and seeded, so the same data give the
    same interval.
    """
    if n_clusters < 1:
        raise ValueError(f"n_clusters must be at least 1, got {n_clusters}")
    if n_clusters <= EXACT_SIGN_PATTERNS:
        codes = np.arange(1, 2**n_clusters)
        flipped, m = ((codes[:, None] >> np.arange(n_clusters)) & 1).astype(float), 2**n_clusters
    else:
        flipped, m = (np.random.default_rng(seed).random((draws, n_clusters)) < 0.5).astype(float), draws + 1
    flipped.setflags(write=False)
    return flipped, m


def cluster_sign_flip(
    diff: Sequence[float] | np.ndarray,
    groups: Sequence[object],
    *,
    alpha: float = 0.05,
    margin: float = 0.0,
    value_range: tuple[float, float] | None = None,
    draws: int = SIGN_FLIP_DRAWS,
    seed: int = 0,
    shape: str = "continuous+few-clusters",
) -> Bound:
    """Cluster sign-flip (randomization) test of the item mean of paired differences, and the
    interval that inverts it: the calibrated method for few clusters (:data:`SIGN_FLIP_CLUSTERS`).

    The test of ``H0: mean = delta`` flips the signs of the cluster totals of the centred
    differences ``a_g(delta) = S_g - n_g delta`` (``S_g`` the sum of the paired differences of
    cluster ``g``, ``n_g`` its number of items) and compares ``T = sum_g a_g`` with its ``M``
    sign-flipped copies (Fisher's randomization test of symmetry [9]_; for clusters, with the
    cluster as the unit that is flipped, Canay, Romano & Shaikh [11]_). Its size is exact at any
    number of clusters when each cluster total is symmetric about 0 under the null, whatever the
    cluster sizes and their variances, which is where cluster-robust t intervals fail (Cameron,
    Gelbach & Miller [12]_: with few clusters they over-reject, and after a small-sample
    correction they are uselessly wide). Skewed cluster totals break the symmetry and make it
    liberal, as they make a t test liberal; :func:`paired_interval` therefore runs it at alpha/2.
    Its smallest p-value is ``1 / 2^C``: a bound at one-sided level ``alpha / 2`` exists once
    ``2^C >= 2 / alpha`` (6 clusters at alpha 0.05, 7 at the 0.025 :func:`paired_interval` uses).

    **Estimand.** Cluster *totals*, not cluster means, are flipped: ``T(delta) = 0`` exactly at the
    item mean ``sum_g S_g / sum_g n_g``, so the test and its interval are about the same quantity as
    the gate's estimate (the item mean). Flipping cluster means would test the unweighted mean of
    cluster means, a different estimand when clusters have unequal sizes; the totals weight each
    cluster by its number of items, as the item mean does.

    **Inversion, in closed form.** ``T*(delta) >= T(delta)`` exactly when the flipped set ``F`` of
    a pattern has ``S_F / n_F <= delta`` (``S_F``, ``n_F``: the summed differences and items of
    the clusters in ``F``). So the one-sided p-value is
    ``p(delta) = (1 + #{F : S_F / n_F <= delta}) / M``, a step function whose steps are the
    item-weighted subset means, and the bounds are their order statistics (Hartigan [13]_, here
    weighted by cluster size): with ``k = floor(alpha/2 M) - 1``, the lower bound is the
    ``(k + 1)``-th smallest subset mean and the upper bound the ``(k + 1)``-th largest. The
    interval holds exactly the shifts not rejected at ``alpha / 2`` on either side, always
    contains the item mean, and ``low > margin`` exactly when ``p <= alpha / 2``. With
    ``k < 0`` (fewer than 6 clusters at alpha 0.05) no shift can be rejected and the interval is
    ``value_range`` (infinite without one).

    Parameters
    ----------
    diff : array of float
        Paired item differences (new - old, oriented so that positive is better).
    groups : sequence
        The cluster of each item (the track several questions are about).
    alpha : float
        Two-sided level: each bound is a one-sided ``1 - alpha/2`` bound.
    margin : float
        The bar of the one-sided p-value ``P(mean > margin)``.
    value_range : (float, float), optional
        The known range of the mean (``(-1, 1)`` for a difference of [0, 1] scores), used when no
        shift can be rejected.
    draws, seed : int
        Monte-Carlo sign patterns beyond :data:`EXACT_SIGN_PATTERNS` clusters, and their seed.
    shape : str
        The data shape recorded with the result (:func:`classify` with ``paired=True``).

    Returns
    -------
    Bound
        The interval, the p-value at ``margin``, the method (``exact cluster sign-flip
        (randomization) test over 10 clusters``) and the shape (``...+few-clusters``).
    """
    d = np.asarray(diff, dtype=float)
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"diff must be a non-empty 1-d array of paired differences, got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError("diff contains NaN or inf; record unscorable items as failures")
    if groups is None:
        raise ValueError("groups is required: the cluster sign-flip test flips whole clusters")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    sums, sizes = cluster_sums(d, groups)
    n_clusters = sums.size
    flipped, m = sign_patterns(n_clusters, draws=draws, seed=seed)
    n_f = np.einsum("pc,c->p", flipped, sizes)  # einsum, not @: no BLAS threads for a mat-vec product
    with np.errstate(invalid="ignore", divide="ignore"):
        subset_means = np.einsum("pc,c->p", flipped, sums) / n_f
    empty = n_f == 0  # a drawn identity pattern: T* = T at every shift
    below = np.where(empty, -math.inf, subset_means)
    above = np.where(empty, math.inf, subset_means)
    k = math.floor(alpha / 2 * m + 1e-9) - 1
    lo_range, hi_range = value_range if value_range is not None else (-math.inf, math.inf)
    low = float(np.partition(below, k)[k]) if k >= 0 else lo_range  # the (k+1)-th smallest
    high = float(-np.partition(-above, k)[k]) if k >= 0 else hi_range  # the (k+1)-th largest
    p = (1 + int(np.count_nonzero(below <= margin))) / m
    if n_clusters <= EXACT_SIGN_PATTERNS:
        method = f"exact cluster sign-flip (randomization) test over {n_clusters} clusters"
    else:
        method = (f"Monte-Carlo cluster sign-flip (randomization) test over {n_clusters} clusters "
                  f"({draws:,} seeded sign patterns)")
    if k < 0:
        method += f", cannot reject at alpha/2 (smallest p-value 1/{m})"
    return Bound(max(low, lo_range), min(high, hi_range), float(p), method, shape)
