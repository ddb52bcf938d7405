"""Family-wise and false-discovery control across a run's p-values: Holm [7]_ and
Benjamini-Hochberg [9]_ (references in :mod:`musiceval.stats`)."""
from __future__ import annotations

from typing import Sequence

import numpy as np


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
