"""Exact and permutation tests of paired differences and proportions: the sign-flip test, the
binomial test, Clopper-Pearson, exact McNemar [5]_ [6]_ (references in :mod:`musiceval.stats`)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from musiceval.stats.core import Interval, as_1d, cluster_sums


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
    d = as_1d(diff, "diff")
    units, _ = cluster_sums(d, groups)
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
