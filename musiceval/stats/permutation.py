"""Chance levels estimated by permuting the item-label link, and their Monte Carlo p-value."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from musiceval.stats.core import as_1d


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
    null = as_1d(null, "null")
    return float((1 + np.sum(null >= observed - 1e-12)) / (1 + null.size))
