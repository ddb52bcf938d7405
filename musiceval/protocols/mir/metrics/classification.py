"""Single-label MIR metrics: multi-class accuracy, key weighted score, per-label breakdowns, baselines.

Conventions
-----------
Predictions are label strings or ``None`` (no usable answer, always wrong). Per-item scores are
returned so paired gates can compare a model with its baseline item by item.

Metrics
-------
- :func:`accuracy_items`: 1.0 where prediction equals reference.
- :func:`key_weighted_items`: ``mir_eval.key.weighted_score`` per item (MIREX: 1 same key,
  0.5 fifth, 0.3 relative, 0.2 parallel, 0 otherwise; no key scores 0).
- :func:`per_label_accuracy`: recall per reference label (the per-genre / per-instrument /
  per-technique breakdown used for the bias analyses).
- :func:`majority_predictions`: the trivial baseline that answers the most frequent label.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np


def validate(references: Sequence[str], predictions: Sequence[str | None]) -> None:
    """Raise ``ValueError`` unless references and predictions are equally long label lists."""
    if len(references) != len(predictions):
        raise ValueError(f"references ({len(references)}) and predictions ({len(predictions)}) differ in length")
    if any(not isinstance(r, str) for r in references):
        raise ValueError("references must be strings")


def accuracy_items(references: Sequence[str], predictions: Sequence[str | None]) -> np.ndarray:
    """Per-item 0/1 correctness; the mean is multi-class accuracy.

    >>> accuracy_items(["rock", "pop"], ["rock", None]).tolist()
    [1.0, 0.0]
    """
    validate(references, predictions)
    return np.array([float(p is not None and p == r) for r, p in zip(references, predictions)])


def key_weighted_items(references: Sequence[str], predictions: Sequence[str | None]) -> np.ndarray:
    """``mir_eval.key.weighted_score`` per item; ``None`` predictions score 0.

    References
    ----------
    MIREX audio key detection; Raffel et al., "mir_eval", ISMIR 2014.
    """
    import mir_eval

    validate(references, predictions)
    return np.array([0.0 if p is None else float(mir_eval.key.weighted_score(r, p)) for r, p in zip(references, predictions)])


def per_label_accuracy(references: Sequence[str], correct: Sequence[float]) -> dict[str, dict[str, float]]:
    """Mean score and count per reference label, sorted by label."""
    by: dict[str, list[float]] = {}
    for r, c in zip(references, correct):
        by.setdefault(r, []).append(float(c))
    return {lab: {"n": len(v), "score": float(np.mean(v))} for lab, v in sorted(by.items())}


def majority_predictions(references: Sequence[str]) -> list[str]:
    """Answer every item with the most frequent reference label (ties: the first in sorted order)."""
    if not references:
        return []
    counts = Counter(references)
    top = max(sorted(counts), key=lambda lab: counts[lab])
    return [top] * len(references)
