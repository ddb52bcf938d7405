"""Normal-theory intervals: the paired standard error and the CR1 cluster-robust one [3]_ [8]_
(references in :mod:`musiceval.stats`)."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from musiceval.stats.core import Interval, as_1d


def paired_standard_error(diff: Sequence[float] | np.ndarray) -> float:
    """Standard error of the mean paired difference, ``sd(diff, ddof=1) / sqrt(n)``."""
    d = as_1d(diff, "diff")
    if d.size < 2:
        return math.inf
    return float(d.std(ddof=1) / math.sqrt(d.size))


def cluster_robust_se(x: Sequence[float] | np.ndarray, groups: Sequence[object]) -> float:
    """CR1 cluster-robust standard error of the mean [3]_, [8]_.

    ``Var = G/(G-1) * sum_g (sum_{i in g} (x_i - xbar))^2 / n^2``; with one item per cluster this
    equals ``paired_standard_error`` up to the (n-1)/n vs ddof factor.
    """
    x = as_1d(x)
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

    d = as_1d(diff, "diff")
    if groups is None:
        se, dof, label = paired_standard_error(d), d.size - 1, "analytic paired SE"
    else:
        se, dof, label = cluster_robust_se(d, groups), len(set(map(str, groups))) - 1, "cluster-robust SE (CR1)"
    if not math.isfinite(se) or dof < 1:
        return Interval(-math.inf, math.inf, label)
    half = float(stdtrit(dof, 1 - alpha / 2)) * se
    return Interval(float(d.mean() - half), float(d.mean() + half), label)
