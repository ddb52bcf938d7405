"""Power: the design effect of clustered items, the minimum detectable effect, the items a
claim needs, and about how many items would decide an INCONCLUSIVE gate."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from musiceval.stats.analytic import cluster_robust_se, paired_standard_error
from musiceval.stats.core import NORMAL, as_1d


def design_effect(diff: Sequence[float] | np.ndarray, groups: Sequence[object] | None) -> float:
    """Variance inflation of the mean from clustering: ``CR1 variance / (s^2 / n)`` (1 without
    clusters; floored at 1 so that clustering never claims to add information)."""
    d = as_1d(diff, "diff")
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
        d = as_1d(diff, "diff")
        sd = float(d.std(ddof=1)) if d.size > 1 else math.inf
        if deff is None:
            deff = design_effect(d, clusters)
        n = d.size if n is None else n
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha}, {power}")
    if n is None or n < 2:
        return math.inf
    z = NORMAL.inv_cdf(1 - alpha / 2) + NORMAL.inv_cdf(power)
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
