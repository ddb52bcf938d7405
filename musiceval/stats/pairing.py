"""Pairing two :class:`~musiceval.records.ItemScores` by item id: the input of every paired test.

A paired comparison (a gate's ``a`` against ``b``, a new run against its baseline) reads the values
of both on the items both scored, in ``a``'s order, with the cluster of each item; the items only
one of them scored are returned by id so that they are counted, never dropped silently.
"""
from __future__ import annotations

import numpy as np

from musiceval.records import ItemScores


def align_paired(a: ItemScores, b: ItemScores) -> tuple[np.ndarray, np.ndarray, tuple[str, ...] | None, list[str]]:
    """Values of ``a`` and ``b`` on their common item ids, the groups, and the unpaired ids.

    >>> from musiceval.records import ItemScores
    >>> a = ItemScores("f1", ids=["x", "y", "z"], values=[1.0, 0.5, 0.0], groups=["t1", "t1", "t2"])
    >>> b = ItemScores("f1", ids=["z", "x"], values=[0.25, 0.75], condition="random")
    >>> va, vb, groups, unpaired = align_paired(a, b)
    >>> va.tolist(), vb.tolist(), groups, unpaired
    ([1.0, 0.0], [0.75, 0.25], ('t1', 't2'), ['y'])
    """
    b_index = {i: k for k, i in enumerate(b.ids)}
    keep_a = [k for k, i in enumerate(a.ids) if i in b_index]
    keep_b = [b_index[a.ids[k]] for k in keep_a]
    common = {a.ids[k] for k in keep_a}
    unpaired = sorted((set(a.ids) | set(b.ids)) - common)
    groups = a.groups if a.groups is not None else b.groups
    if groups is not None:
        src = a if a.groups is not None else b
        pos = {i: k for k, i in enumerate(src.ids)}
        groups = tuple(src.groups[pos[a.ids[k]]] for k in keep_a)  # type: ignore[index]
    return a.values[keep_a], b.values[keep_b], groups, unpaired
