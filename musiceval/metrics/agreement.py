"""Agreement between two label extractors on the same answers (rule vs LLM, docs/protocols/factual.md).

Both extractors map each answer to a set of labels from one closed vocabulary; the two lists of
sets are compared item by item.

Conventions
-----------
* **exact-set agreement**: the share of items whose two label sets are equal (both empty counts
  as agreement: both extractors found no label).
* **mean Jaccard**: the mean over items of ``|a & b| / |a | b|``; both empty is 1.0 (the same
  convention as exact-set agreement).
* **Cohen's kappa per label** (Cohen 1960): each label is a binary rating "named / not named" by
  each extractor over the items; ``kappa = (p_o - p_e) / (1 - p_e)``. When both extractors give
  one constant rating (``p_e == 1``) kappa is undefined and reported as NaN (scikit-learn's
  ``cohen_kappa_score`` returns NaN there too); ``kappa_mean`` averages the defined values.

Metrics
-------
:func:`exact_set_agreement`, :func:`mean_jaccard`, :func:`label_kappas`, :func:`agreement_summary`.

References
----------
.. [1] J. Cohen, "A coefficient of agreement for nominal scales", Educational and Psychological
   Measurement 20(1), 1960.
.. [2] scikit-learn, ``sklearn.metrics.cohen_kappa_score``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from musiceval.metrics.sets import LabelSets, binarize, validate


def exact_set_agreement(a: LabelSets, b: LabelSets) -> float:
    """Share of items where both extractors return the same label set (NaN for no items).

    >>> exact_set_agreement([["pop"], [], ["rock", "pop"]], [["pop"], [], ["rock"]])
    0.6666666666666666
    """
    sa, sb = validate(a, b)
    return float(np.mean([x == y for x, y in zip(sa, sb)])) if sa else float("nan")


def mean_jaccard(a: LabelSets, b: LabelSets) -> float:
    """Mean over items of the Jaccard index of the two label sets (both empty: 1.0).

    >>> mean_jaccard([["pop", "rock"], []], [["pop"], []])
    0.75
    """
    sa, sb = validate(a, b)
    if not sa:
        return float("nan")
    return float(np.mean([len(x & y) / len(x | y) if x | y else 1.0 for x, y in zip(sa, sb)]))


def cohen_kappa(x: np.ndarray, y: np.ndarray) -> float:
    """Cohen's kappa of two binary ratings of the same items (NaN when chance agreement is 1, as
    ``sklearn.metrics.cohen_kappa_score``)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    p_o = float(np.mean(x == y))
    p_e = float(x.mean() * y.mean() + (1 - x.mean()) * (1 - y.mean()))
    return float("nan") if p_e == 1.0 else (p_o - p_e) / (1 - p_e)


def label_kappas(a: LabelSets, b: LabelSets, labels: Sequence[str]) -> dict[str, float]:
    """Cohen's kappa of the two extractors' binary "names this label" ratings, per label."""
    sa, sb = validate(a, b)
    ma, mb = binarize(sa, labels), binarize(sb, labels)
    return {label: cohen_kappa(ma[:, j], mb[:, j]) if len(sa) else float("nan") for j, label in enumerate(labels)}


def agreement_summary(a: LabelSets, b: LabelSets, labels: Sequence[str]) -> dict:
    """``n``, ``exact_set``, ``mean_jaccard``, ``kappa_mean`` (over labels with a defined kappa),
    ``n_kappa_labels`` and ``kappa_per_label`` for one task."""
    kappas = label_kappas(a, b, labels)
    defined = [k for k in kappas.values() if not np.isnan(k)]
    return {"n": len(a), "exact_set": exact_set_agreement(a, b), "mean_jaccard": mean_jaccard(a, b),
            "kappa_mean": float(np.mean(defined)) if defined else float("nan"), "n_kappa_labels": len(defined),
            "kappa_per_label": kappas}
