"""Paired statistics for release gates: intervals, exact tests, permutation nulls, Holm.

Conventions
-----------
- Inputs are 1-d numpy arrays of per-item values (paired differences, 0/1 outcomes) and an
  optional array of cluster labels (``groups``): several questions about one track are not
  independent, so when ``groups`` is given every resampling or variance estimate works on clusters.
- Every random procedure takes an explicit ``seed`` and uses ``numpy.random.default_rng``.
- Intervals are two-sided at level ``1 - alpha``; p-values are one-sided ("greater") unless a
  function says otherwise, because every gate asks a directional question.
- :func:`decide` is the single outcome rule: PASS when the interval's lower bound clears the
  margin, FAIL when its upper bound is below the margin, INCONCLUSIVE otherwise.

Functions
---------
- :func:`bootstrap_means`, :func:`paired_bootstrap_ci` (percentile and BCa, cluster-aware)
- :func:`paired_standard_error`, :func:`cluster_robust_se`, :func:`analytic_ci`
- :func:`sign_flip_test` (paired permutation test), :func:`mcnemar_exact`,
  :func:`binomial_test_greater`, :func:`clopper_pearson`
- :func:`permutation_null` (chance level by label permutation), :func:`permutation_p_value`
- :func:`holm`, :func:`benjamini_hochberg`, :func:`adjust` (family-wise / FDR control), :func:`decide`,
  :func:`items_to_decide`
- :func:`minimum_detectable_effect`, :func:`required_items`, :func:`design_effect` (power)

References
----------
.. [1] Efron, B. (1987). Better bootstrap confidence intervals. JASA 82(397), 171-185 (BCa).
.. [2] Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 14 (jackknife
       acceleration) and ch. 15 (permutation tests).
.. [3] Cameron, A. C. & Miller, D. L. (2015). A practitioner's guide to cluster-robust
       inference. J. Human Resources 50(2) (CR1 small-sample factor G/(G-1)).
.. [4] Field, C. A. & Welsh, A. H. (2007). Bootstrapping clustered data. JRSS-B 69(3)
       (resampling whole clusters).
.. [5] McNemar, Q. (1947). Psychometrika 12(2); exact conditional form: Fagerland, Lydersen &
       Laake (2013), BMC Med. Res. Methodol. 13:91.
.. [6] Clopper, C. J. & Pearson, E. S. (1934). Biometrika 26(4).
.. [7] Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scand. J. Stat.
.. [8] Miller, E. (2024). Adding error bars to evals (clustered standard errors for LLM evals).
.. [9] Benjamini, Y. & Hochberg, Y. (1995). Controlling the false discovery rate. JRSS-B 57(1).
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from statistics import NormalDist
from typing import Callable, Sequence

import numpy as np

from musiceval.records import Outcome

_NORMAL = NormalDist()


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: str


# ----------------------------------------------------------------------------- helpers


def _as_1d(x: Sequence[float] | np.ndarray, name: str = "x") -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: a gate needs at least one scored item")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf; record unscorable items as failures")
    return arr


def _cluster_sums(x: np.ndarray, groups: Sequence[object] | None) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster sums and sizes in a canonical order (sorted values, or sorted cluster labels),
    so that every resampling result is invariant to the order in which items arrive."""
    if groups is None:
        return np.sort(x), np.ones_like(x)
    if len(groups) != len(x):
        raise ValueError(f"groups has {len(groups)} labels for {len(x)} values")
    _, codes = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)
    order = np.lexsort((x, codes))  # fixed summation order: bit-identical sums for any item order
    sums = np.bincount(codes[order], weights=x[order])
    sizes = np.bincount(codes).astype(float)
    return sums, sizes


# ----------------------------------------------------------------------------- bootstrap


def bootstrap_means(
    x: Sequence[float] | np.ndarray,
    *,
    groups: Sequence[object] | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
    n_threads: int = 2,
) -> np.ndarray:
    """Means of ``n_resamples`` nonparametric bootstrap resamples of ``x``.

    With ``groups``, whole clusters are resampled and each replicate is the ratio of resampled
    cluster sums to resampled cluster sizes (the item-level mean of the replicate) [4]_.
    Vectorised in blocks, split over ``n_threads`` threads with independent child seeds, so the
    result depends on ``seed`` and ``n_threads`` only.
    """
    x = _as_1d(x)
    sums, sizes = _cluster_sums(x, groups)
    g = len(sums)
    # Centre before the float32 gather so that summing thousands of values loses no precision
    # that matters; the sums are accumulated in float64 and the centre added back.
    centre = float(sums.mean())
    centred = (sums - centre).astype(np.float32)
    sizes32 = sizes.astype(np.float32)
    children = np.random.SeedSequence(seed).spawn(n_threads)
    shares = np.array_split(np.arange(n_resamples), n_threads)
    equal_sizes = groups is None

    def work(k: int) -> np.ndarray:
        bitgen = np.random.SFC64(children[k])
        count = len(shares[k])
        out = np.empty(count)
        # ~256k indices per block keep indices and gathered values in the L2 cache: 2x faster
        # than multi-megabyte blocks on the 2-core CI machines (benchmarks/bench_bootstrap.py)
        block = max(1, 262_144 // max(g, 1))
        for start in range(0, count, block):
            rows = min(start + block, count) - start
            idx = _uniform_indices(bitgen, rows * g, g).reshape(rows, g)
            total = np.take(centred, idx).sum(axis=1, dtype=np.float64) + centre * g
            size = g if equal_sizes else np.take(sizes32, idx).sum(axis=1, dtype=np.float64)
            out[start : start + rows] = total / size
        return out

    if n_threads == 1:
        return work(0)
    with ThreadPoolExecutor(max_workers=n_threads) as pool:
        return np.concatenate(list(pool.map(work, range(n_threads))))


def _uniform_indices(bitgen: np.random.BitGenerator, count: int, g: int) -> np.ndarray:
    """``count`` indices in ``[0, g)``: ``floor(w * g / 2**32)`` for 32-bit random words ``w``.

    The multiply-shift map of Lemire (2019) without its rejection step: the largest deviation
    from uniform is ``g / 2**32`` relative (1.7e-5 for 75,000 items), far below bootstrap Monte
    Carlo error, and it is several times faster than ``Generator.integers``. The float64 product
    is exact enough that the floor never reaches ``g``.
    """
    words = bitgen.random_raw((count + 1) // 2).view(np.uint32)[:count]
    return (words * (g / 2**32)).astype(np.int32)


def _jackknife_means(x: np.ndarray, groups: Sequence[object] | None) -> np.ndarray:
    """Leave-one-cluster-out means, analytic: (S - s_g) / (N - n_g)."""
    sums, sizes = _cluster_sums(x, groups)
    if len(sums) < 2:
        return np.array([x.mean()])
    return (sums.sum() - sums) / (sizes.sum() - sizes)


def paired_bootstrap_ci(
    diff: Sequence[float] | np.ndarray,
    *,
    groups: Sequence[object] | None = None,
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    method: str = "bca",
) -> Interval:
    """Bootstrap interval for the mean of paired differences ``diff = a - b``.

    ``method="percentile"`` takes the alpha/2 and 1-alpha/2 quantiles of the replicate means;
    ``method="bca"`` corrects them for bias (z0) and skew (acceleration from the jackknife,
    leave-one-cluster-out when ``groups`` is given) following Efron (1987) [1]_, [2]_.

    >>> ci = paired_bootstrap_ci([0.2, 0.1, 0.3, 0.25, 0.15] * 20, seed=1)
    >>> ci.low < 0.2 < ci.high
    True
    """
    d = _as_1d(diff, "diff")
    if method not in ("bca", "percentile"):
        raise ValueError(f"method must be 'bca' or 'percentile', got {method!r}")
    sums, sizes = _cluster_sums(d, groups)
    theta = float(sums.sum() / sizes.sum())  # canonical summation order: order-invariant
    if np.ptp(d) == 0:  # no variability: every resample equals the estimate
        return Interval(theta, theta, method)
    reps = bootstrap_means(d, groups=groups, n_resamples=n_resamples, seed=seed)
    lo_q, hi_q = alpha / 2, 1 - alpha / 2
    if method == "bca":
        # replicates are accumulated through float32 centred values: treat |rep - theta| below
        # a relative 1e-6 as ties so that rounding never decides which side a replicate is on
        tol = 1e-6 * max(1.0, abs(theta), float(np.abs(d).max()))
        prop = (np.sum(reps < theta - tol) + 0.5 * np.sum(np.abs(reps - theta) <= tol)) / len(reps)
        prop = min(max(prop, 1.0 / (len(reps) + 1)), 1 - 1.0 / (len(reps) + 1))
        z0 = _NORMAL.inv_cdf(prop)
        jack = _jackknife_means(d, groups)
        u = jack.mean() - jack
        denom = 6.0 * (np.sum(u**2) ** 1.5)
        a = float(np.sum(u**3) / denom) if denom > 0 else 0.0

        def adjust(q: float) -> float:
            z = _NORMAL.inv_cdf(q)
            return _NORMAL.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))

        lo_q, hi_q = adjust(lo_q), adjust(hi_q)
    low, high = np.quantile(reps, [lo_q, hi_q])
    return Interval(float(low), float(high), f"{method} bootstrap ({n_resamples} resamples"
                    + (", clustered)" if groups is not None else ")"))


# ----------------------------------------------------------------------------- analytic


def paired_standard_error(diff: Sequence[float] | np.ndarray) -> float:
    """Standard error of the mean paired difference, ``sd(diff, ddof=1) / sqrt(n)``."""
    d = _as_1d(diff, "diff")
    if d.size < 2:
        return math.inf
    return float(d.std(ddof=1) / math.sqrt(d.size))


def cluster_robust_se(x: Sequence[float] | np.ndarray, groups: Sequence[object]) -> float:
    """CR1 cluster-robust standard error of the mean [3]_, [8]_.

    ``Var = G/(G-1) * sum_g (sum_{i in g} (x_i - xbar))^2 / n^2``; with one item per cluster this
    equals ``paired_standard_error`` up to the (n-1)/n vs ddof factor.
    """
    x = _as_1d(x)
    _, codes = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)
    n_groups = int(codes.max()) + 1
    if n_groups < 2:
        return math.inf
    resid = np.bincount(codes, weights=x - x.mean())
    var = n_groups / (n_groups - 1) * np.sum(resid**2) / x.size**2
    return float(math.sqrt(var))


def analytic_ci(
    diff: Sequence[float] | np.ndarray, *, groups: Sequence[object] | None = None, alpha: float = 0.05
) -> Interval:
    """Normal-theory interval ``mean +/- t * se`` (t with n-1, or G-1 clustered, dof)."""
    from scipy.special import stdtrit  # Student's t quantile: what scipy.stats.t.ppf calls

    d = _as_1d(diff, "diff")
    if groups is None:
        se, dof, label = paired_standard_error(d), d.size - 1, "analytic paired SE"
    else:
        se, dof, label = cluster_robust_se(d, groups), len(set(map(str, groups))) - 1, "cluster-robust SE (CR1)"
    if not math.isfinite(se) or dof < 1:
        return Interval(-math.inf, math.inf, label)
    half = float(stdtrit(dof, 1 - alpha / 2)) * se
    return Interval(float(d.mean() - half), float(d.mean() + half), label)


# ----------------------------------------------------------------------------- exact tests


def sign_flip_test(
    diff: Sequence[float] | np.ndarray,
    *,
    groups: Sequence[object] | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> float:
    """One-sided paired permutation (sign-flip) test of ``mean(diff) > 0``.

    Under the null of exchangeable pairs each difference (each cluster's summed difference when
    ``groups`` is given) is equally likely to carry either sign [2]_. Exact enumeration for up to
    16 units; otherwise Monte Carlo with ``p = (1 + #{T* >= T}) / (1 + B)``.
    """
    d = _as_1d(diff, "diff")
    units, _ = _cluster_sums(d, groups)
    observed = units.sum()
    tol = 1e-12 * max(1.0, np.abs(units).sum())
    if len(units) <= 16:
        signs = 1 - 2 * ((np.arange(2 ** len(units))[:, None] >> np.arange(len(units))) & 1)
        stats = signs @ units
        return float(np.mean(stats >= observed - tol))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, n_resamples, 1000):
        b = min(1000, n_resamples - start)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(b, len(units)))
        hits += int(np.sum(signs @ units >= observed - tol))
    return (1 + hits) / (1 + n_resamples)


def _binom_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space for stability."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    from scipy.special import betainc

    return float(betainc(k, n - k + 1, p))  # P(X >= k) = I_p(k, n - k + 1), what binom.sf computes


def binomial_test_greater(k: int, n: int, p0: float) -> float:
    """Exact one-sided binomial test: P(X >= k | n, p0)."""
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if not 0 < p0 < 1:
        raise ValueError(f"chance level p0 must be in (0, 1), got {p0}")
    return _binom_sf(k, n, p0)


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> Interval:
    """Exact (Clopper-Pearson) two-sided interval for a binomial proportion [6]_."""
    from scipy.special import betaincinv  # the beta quantile: what scipy.stats.beta.ppf calls

    if n == 0:
        return Interval(0.0, 1.0, "Clopper-Pearson")
    low = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, alpha / 2))
    high = 1.0 if k == n else float(betaincinv(k + 1, n - k, 1 - alpha / 2))
    return Interval(low, high, "Clopper-Pearson")


def mcnemar_exact(a_correct: Sequence[bool], b_correct: Sequence[bool]) -> tuple[float, int, int]:
    """Exact one-sided McNemar test that system A is right more often than B on the same items.

    Returns ``(p, n_a_only, n_b_only)`` where the discordant counts are the items only A got
    right and only B got right; ``p = P(X >= n_a_only)`` for ``X ~ Bin(n_a_only + n_b_only, 1/2)``
    (the exact conditional test [5]_).
    """
    a = np.asarray(a_correct, dtype=bool)
    b = np.asarray(b_correct, dtype=bool)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired outcomes must be 1-d and equal length, got {a.shape} and {b.shape}")
    a_only = int(np.sum(a & ~b))
    b_only = int(np.sum(~a & b))
    if a_only + b_only == 0:
        return 1.0, 0, 0
    return _binom_sf(a_only, a_only + b_only, 0.5), a_only, b_only


# ----------------------------------------------------------------------------- permutation nulls


def permutation_null(
    score_fn: Callable[[np.ndarray], float],
    n_items: int,
    *,
    n_permutations: int = 1000,
    seed: int = 0,
) -> np.ndarray:
    """Chance level by label permutation: ``score_fn(perm)`` for random permutations of items.

    ``score_fn`` receives a permutation of ``range(n_items)`` and returns the mean score obtained
    when predictions are paired with the permuted items' truths (so the label marginals are kept
    and only the item-answer link is broken). Returns the ``n_permutations`` null means.
    """
    if n_items < 2:
        raise ValueError("a permutation null needs at least two items")
    rng = np.random.default_rng(seed)
    return np.array([score_fn(rng.permutation(n_items)) for _ in range(n_permutations)], dtype=float)


def permutation_p_value(observed: float, null: Sequence[float] | np.ndarray) -> float:
    """One-sided Monte Carlo p-value ``(1 + #{null >= observed}) / (1 + B)``."""
    null = _as_1d(null, "null")
    return float((1 + np.sum(null >= observed - 1e-12)) / (1 + null.size))


# ----------------------------------------------------------------------------- decisions


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1) [7]_.

    >>> holm([0.01, 0.04, 0.03]).round(2).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


def benjamini_hochberg(p_values: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (step-up, monotone, capped at 1): controls the false
    discovery rate instead of the family-wise error rate [9]_.

    >>> benjamini_hochberg([0.01, 0.04, 0.03]).round(2).tolist()
    [0.03, 0.04, 0.04]
    """
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")[::-1]  # largest first
    ranks = m - np.arange(m)  # rank of each p in ascending order
    adjusted = np.minimum.accumulate(p[order] * m / ranks)
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


_ADJUSTERS = {"holm": holm, "bh": benjamini_hochberg}


def adjust(p_values: Sequence[float | None], method: str = "holm") -> list[float | None]:
    """Multiplicity-adjusted p-values across a family of gates (all regression gates of a run).

    ``method="holm"`` (family-wise error rate, the default) or ``"bh"`` (Benjamini-Hochberg false
    discovery rate). ``None`` entries (gates without a p-value) stay ``None`` and do not count
    towards the family size.
    """
    if method not in _ADJUSTERS:
        raise ValueError(f"adjust method must be one of {sorted(_ADJUSTERS)}, got {method!r}")
    idx = [k for k, p in enumerate(p_values) if p is not None]
    adjusted = _ADJUSTERS[method]([p_values[k] for k in idx]) if idx else np.array([])
    out: list[float | None] = [None] * len(p_values)
    for k, v in zip(idx, adjusted):
        out[k] = float(v)
    return out


def design_effect(diff: Sequence[float] | np.ndarray, groups: Sequence[object] | None) -> float:
    """Variance inflation of the mean from clustering: ``CR1 variance / (s^2 / n)`` (1 without
    clusters; floored at 1 so that clustering never claims to add information)."""
    d = _as_1d(diff, "diff")
    if groups is None or len(set(map(str, groups))) in (len(d), 1) or d.size < 2:
        return 1.0
    iid = paired_standard_error(d) ** 2
    if iid == 0 or not math.isfinite(iid):
        return 1.0
    return max(1.0, cluster_robust_se(d, groups) ** 2 / iid)


def minimum_detectable_effect(
    diff: float | Sequence[float] | np.ndarray,
    n: int | None = None,
    clusters: Sequence[object] | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    *,
    deff: float | None = None,
) -> float:
    """Smallest true mean paired difference a gate detects with probability ``power``.

    ``MDE = (z_{1-alpha/2} + z_{power}) * sd * sqrt(deff / n)``: the gates' decisions use the
    lower bound of a two-sided ``1 - alpha`` interval, a one-sided test at ``alpha / 2``.
    ``diff`` is either the per-item paired differences of a (pilot) run or their standard
    deviation. ``clusters`` (one label per difference) gives the design effect from the CR1
    variance [3]_; ``deff`` sets it directly (e.g. ``1 + (m - 1) * icc``). ``n`` defaults to the
    number of differences; pass another ``n`` to ask what a bigger or smaller set would detect.

    >>> round(minimum_detectable_effect(0.3, 334), 4)
    0.046
    """
    if isinstance(diff, (int, float)):
        sd = float(diff)
        if n is None:
            raise ValueError("minimum_detectable_effect: pass n when diff is a standard deviation")
        if clusters is not None and deff is None:
            raise ValueError("minimum_detectable_effect: cluster labels need the differences; pass deff with an sd")
    else:
        d = _as_1d(diff, "diff")
        sd = float(d.std(ddof=1)) if d.size > 1 else math.inf
        if deff is None:
            deff = design_effect(d, clusters)
        n = d.size if n is None else n
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha}, {power}")
    if n is None or n < 2:
        return math.inf
    z = _NORMAL.inv_cdf(1 - alpha / 2) + _NORMAL.inv_cdf(power)
    return float(z * sd * math.sqrt((deff or 1.0) / n))


def required_items(
    diff: float | Sequence[float] | np.ndarray,
    drop: float,
    clusters: Sequence[object] | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    *,
    deff: float | None = None,
) -> int:
    """Items needed so that :func:`minimum_detectable_effect` is at most ``drop`` (same inputs)."""
    if drop <= 0:
        raise ValueError(f"the drop to detect must be positive, got {drop}")
    at_one = minimum_detectable_effect(diff, 2, clusters, alpha, power, deff=deff) * math.sqrt(2)
    if not math.isfinite(at_one):
        raise ValueError("the pilot differences have no spread estimate (fewer than 2 items)")
    return max(2, math.ceil((at_one / drop) ** 2))


def items_to_decide(ci: tuple[float, float], estimate: float, bar: float, n: int) -> int | None:
    """About how many items an undecided interval needs to clear ``bar``, with the same design
    (spread and clustering): the half-width shrinks as ``1 / sqrt(n)``, so the interval clears
    the bar once it is ``|estimate - bar|`` wide on each side. None when the estimate sits on the
    bar (no sample size decides it) or the interval is not finite.

    >>> items_to_decide((-0.02, 0.06), 0.02, 0.0, 100)
    400
    """
    low, high = ci
    if n <= 0 or not all(math.isfinite(v) for v in (low, high, estimate, bar)):
        return None
    gap = abs(estimate - bar)
    if gap == 0:
        return None
    return max(n + 1, math.ceil(n * ((high - low) / 2 / gap) ** 2))


def decide(ci: tuple[float, float] | Interval, margin: float = 0.0) -> Outcome:
    """PASS when the interval's lower bound clears ``margin``, FAIL when its upper bound is below
    it, INCONCLUSIVE otherwise (the interval straddles the margin)."""
    low, high = (ci.low, ci.high) if isinstance(ci, Interval) else ci
    if low > margin:
        return Outcome.PASS
    if high < margin:
        return Outcome.FAIL
    return Outcome.INCONCLUSIVE
