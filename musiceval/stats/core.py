"""What every statistics module shares: the :class:`Interval`, input checks, cluster sums in a
canonical order, and :func:`decide`, the single outcome rule of every gate (docs/regression-gates.md)."""
from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

import numpy as np

from musiceval.records import Outcome


NORMAL = NormalDist()


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: str


def as_1d(x: Sequence[float] | np.ndarray, name: str = "x") -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: a gate needs at least one scored item")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf; record unscorable items as failures")
    return arr


def cluster_sums(x: np.ndarray, groups: Sequence[object] | None) -> tuple[np.ndarray, np.ndarray]:
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


def decide(ci: tuple[float, float] | Interval, margin: float = 0.0) -> Outcome:
    """PASS when the interval's lower bound clears ``margin``, FAIL when its upper bound is below
    it, INCONCLUSIVE otherwise (the interval straddles the margin)."""
    low, high = (ci.low, ci.high) if isinstance(ci, Interval) else ci
    if low > margin:
        return Outcome.PASS
    if high < margin:
        return Outcome.FAIL
    return Outcome.INCONCLUSIVE
