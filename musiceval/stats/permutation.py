"""Chance levels estimated by permuting the item-label link, and their Monte Carlo p-value.

Rows of one item (the K sampled answers of ``musiceval run --repeats K``, :mod:`musiceval.suite.repeats`)
move together: :func:`item_codes` and :func:`moved_rows` turn a permutation of the items into the
rows' new places, so a row meets the truth of another item, never another repeat of its own item
unless the permutation leaves that whole item in place, as a one-answer row meets its own truth
(Good 2005, "Permutation, Parametric and Bootstrap Tests of Hypotheses", 3rd ed.: permute the
exchangeable units; the repeats nested in one item are not exchangeable with another item's).
"""
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


def item_codes(items: Sequence[str] | None, n_rows: int) -> np.ndarray:
    """Per row, the index of its item in the order items first appear (``items``: one name per row;
    None: every row its own item, codes ``0..n_rows-1``).

    >>> item_codes(["q2", "q1", "q2"], 3).tolist(), item_codes(None, 2).tolist()
    ([0, 1, 0], [0, 1])
    """
    if items is None:
        return np.arange(n_rows)
    if len(items) != n_rows:
        raise ValueError(f"items: {len(items)} item names for {n_rows} rows; give one per row (the item it answers)")
    first: dict[str, int] = {}
    return np.array([first.setdefault(str(i), len(first)) for i in items], dtype=int)


def moved_rows(codes: np.ndarray, perm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows after a permutation of whole items: item ``j``'s place takes every row of item
    ``perm[j]``. Returns ``(rows, place)``: the row indices in the order of the places, and the
    item (place) each lands on. With one row per item (``codes`` = ``0..n-1``) ``rows`` is
    ``perm`` and ``place`` is ``0..n-1``: the plain permutation of rows.

    >>> rows, place = moved_rows(np.array([0, 0, 1, 2]), np.array([2, 0, 1]))
    >>> rows.tolist(), place.tolist()
    ([3, 0, 1, 2], [0, 1, 1, 2])
    """
    pos = np.empty(perm.size, dtype=int)
    pos[perm] = np.arange(perm.size)  # the place of each item
    rank = pos[codes]
    rows = np.argsort(rank, kind="stable")
    return rows, rank[rows]


def permutation_p_value(observed: float, null: Sequence[float] | np.ndarray) -> float:
    """One-sided Monte Carlo p-value ``(1 + #{null >= observed}) / (1 + B)``."""
    null = as_1d(null, "null")
    return float((1 + np.sum(null >= observed - 1e-12)) / (1 + null.size))
