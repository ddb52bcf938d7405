"""Sequence outputs: melody overall accuracy (mir_eval.melody) and frame-level technique F1.

Conventions
-----------
Melody: times in seconds and frequencies in Hz (0 = unvoiced), as returned by
:mod:`musiceval.parsers.melody`; mir_eval resamples both to a 10 ms grid; pitch tolerance 50 cents.
Frames: boolean matrices (frames x classes) as returned by :mod:`musiceval.parsers.guzheng`.

Metrics
-------
- :func:`melody_overall_accuracy`: ``mir_eval.melody.evaluate(...)["Overall Accuracy"]``.
- :func:`frame_counts`: per-class true positives, false positives, false negatives of one item.
- :func:`frame_f1`: micro F1 (pooled counts over classes and items) and macro F1 (F1 per class over
  pooled items, then the unweighted mean over the 7 classes; a class with no support and no
  prediction has F1 0, as in the CMI-Bench toolkit).
"""
from __future__ import annotations

import warnings

import numpy as np


def melody_overall_accuracy(ref_time: np.ndarray, ref_freq: np.ndarray, est_time: np.ndarray, est_freq: np.ndarray) -> float:
    """Overall accuracy of one melody (Salamon et al. 2014; mir_eval.melody).

    References
    ----------
    Salamon, Gomez, Ellis & Richard, "Melody extraction from polyphonic music signals",
    IEEE Signal Processing Magazine 31(2), 2014.
    """
    import mir_eval

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(mir_eval.melody.evaluate(ref_time, ref_freq, est_time, est_freq)["Overall Accuracy"])


def frame_counts(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """Array (3, n_classes) of per-class TP, FP, FN over the frames of one item."""
    t = np.asarray(y_true).astype(bool)
    p = np.asarray(y_pred).astype(bool)
    if t.shape != p.shape:
        raise ValueError(f"frame matrices differ in shape: {t.shape} vs {p.shape}")
    return np.stack([(t & p).sum(0), (~t & p).sum(0), (t & ~p).sum(0)]).astype(float)


def _f1(tp: float, fp: float, fn: float) -> float:
    prec = tp / (tp + fp) if tp + fp > 0 else 0.0
    rec = tp / (tp + fn) if tp + fn > 0 else 0.0
    return 2 * prec * rec / (prec + rec) if prec + rec > 0 else 0.0


def frame_f1(counts: np.ndarray) -> dict[str, object]:
    """Micro and macro F1 from summed :func:`frame_counts` (shape (3, n_classes)).

    Returns ``{"micro_f1", "macro_f1", "per_class_f1"}``.
    """
    counts = np.asarray(counts, dtype=float)
    tp, fp, fn = counts
    per_class = [_f1(a, b, c) for a, b, c in zip(tp, fp, fn)]
    return {
        "micro_f1": _f1(tp.sum(), fp.sum(), fn.sum()),
        "macro_f1": float(np.mean(per_class)),
        "per_class_f1": per_class,
    }
