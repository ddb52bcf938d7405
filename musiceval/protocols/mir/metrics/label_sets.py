"""Label-set tasks (Lyra instrument, genre and place): an answer names several labels, scored by F1.

Metrics (``evaluate.py`` at nicolaus625/CMI-bench@35235cb, ``lyra_multilabel_scores``):

- ``micro_f1``: 2 TP / (2 TP + FP + FN), the counts pooled over every item and label;
- ``macro_f1``: the mean over labels of each label's F1 (0 where it has no TP, FP or FN);
- ``exact_match``: the share of items whose named labels are exactly the reference's;
- ``item_f1`` (per item, the unit of the gates): 2 |P ∩ T| / (|P| + |T|), 1 when both sets are empty
  (sklearn's ``f1_score(average="samples", zero_division=1)``).

Which labels count: the toolkit (``compat``) reads the file's label list from its references and
names a label by substring (:func:`musiceval.parsers.label_sets.named_labels_cmi`), so a label the
answer names that no reference holds is no false positive, and ``macro_f1`` averages over the
references' labels. The default rule reads whole-word mentions of the instruction's labels
(:data:`musiceval.vocab.cmibench.LABEL_SET_VOCABULARIES` and the references' own), counts every
label named that the item lacks as a false positive, and averages ``macro_f1`` over the labels
some reference holds (the F1 of a label no reference holds is undefined).
The trivial baseline answers every item with the file's most common reference set.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from musiceval.records import ItemFailure
from musiceval.schemas import OutputRecord


def f1_counts(truth: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-label TP, FP and FN of two boolean (items x labels) matrices."""
    truth, pred = np.asarray(truth, dtype=bool), np.asarray(pred, dtype=bool)
    return (truth & pred).sum(0), (~truth & pred).sum(0), (truth & ~pred).sum(0)


def micro_f1(truth: np.ndarray, pred: np.ndarray) -> float:
    """2 TP / (2 TP + FP + FN) pooled over items and labels; 0 when there is nothing to count.

    >>> micro_f1([[1, 0], [1, 1]], [[1, 1], [0, 1]])
    0.6666666666666666
    """
    tp, fp, fn = (int(c.sum()) for c in f1_counts(truth, pred))
    return 0.0 if 2 * tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


def label_f1(truth: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Each label's F1 (a column of the matrices), 0 where it has no TP, FP or FN."""
    tp, fp, fn = f1_counts(truth, pred)
    denom = 2 * tp + fp + fn
    return np.divide(2 * tp, denom, out=np.zeros(len(tp), dtype=float), where=denom > 0)


def item_f1(truth: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Each item's F1 (a row of the matrices): 2 |P ∩ T| / (|P| + |T|), 1 when both are empty."""
    truth, pred = np.asarray(truth, dtype=bool), np.asarray(pred, dtype=bool)
    both, size = (truth & pred).sum(1), truth.sum(1) + pred.sum(1)
    return np.divide(2 * both, size, out=np.ones(len(size), dtype=float), where=size > 0)


def summary(truth: np.ndarray, pred: np.ndarray, macro_over: np.ndarray | None = None) -> dict[str, float]:
    """``micro_f1``, ``macro_f1`` (over the labels ``macro_over`` marks, default all) and ``exact_match``."""
    per_label = label_f1(truth, pred)
    if macro_over is not None:
        per_label = per_label[np.asarray(macro_over, dtype=bool)]
    exact = (np.asarray(truth, dtype=bool) == np.asarray(pred, dtype=bool)).all(1)
    return {"micro_f1": micro_f1(truth, pred), "macro_f1": float(per_label.mean()) if len(per_label) else 0.0,
            "exact_match": float(exact.mean()) if len(exact) else 0.0}


def label_set_scores(task: str, records: Sequence[OutputRecord], compat: str | None,
                     vocabulary: Sequence[str]) -> dict:
    """Matrices, metrics, per-item F1, failures and the baseline of one label-set task (module docstring)."""
    from musiceval.parsers.label_sets import label_set_cmi, named_labels, named_labels_cmi, reference_labels
    from musiceval.parsers.labels import normalise_cmi

    failures: list[ItemFailure] = []
    shown: dict[str, str] = {}  # key -> the label as the instruction writes it (default rule)
    if compat:
        truths = [label_set_cmi(r.correct_answer) for r in records]
        keys = sorted(set().union(*truths))
        preds = [named_labels_cmi(r.response, keys) for r in records]
    else:
        names = list(dict.fromkeys([*vocabulary, *(lab for r in records for lab in reference_labels(r.correct_answer))]))
        for name in names:
            shown.setdefault(normalise_cmi(name), name)
        keys = list(shown)
        truths = [frozenset(normalise_cmi(lab) for lab in reference_labels(r.correct_answer)) for r in records]
        preds = [named_labels(r.response, names) for r in records]
        for r, t, p in zip(records, truths, preds):
            if not p and t:
                failures.append(ItemFailure(r.item_id, f"no label of the list named, scored as none: {r.response[:60]!r}"))
    truth = np.array([[k in t for k in keys] for t in truths], dtype=bool).reshape(len(records), len(keys))
    pred = np.array([[k in p for k in keys] for p in preds], dtype=bool).reshape(len(records), len(keys))
    held = truth.any(0)
    metrics = summary(truth, pred, None if compat else held)
    common = Counter(truths).most_common(1)[0][0] if truths else frozenset()
    base = np.tile(np.array([k in common for k in keys], dtype=bool), (len(records), 1)).reshape(len(records), len(keys))
    return {"metrics": metrics, "item_f1": item_f1(truth, pred), "failures": failures,
            "baseline_item_f1": item_f1(truth, base), "baseline_metrics": summary(truth, base, None if compat else held),
            "baseline_set": sorted(shown.get(k, k) for k in common),
            "per_label_f1": {shown.get(k, k): v for k, v in zip(keys, label_f1(truth, pred).tolist())}}
