"""Beat and downbeat tracking metrics through ``mir_eval.beat``, and the evenly-spaced baseline.

Conventions
-----------
Beat times are 1-d arrays of seconds, sorted. Beats are not trimmed (the CMI-Bench toolkit calls
``mir_eval.beat.f_measure`` directly, without ``mir_eval.beat.trim_beats``); the F-measure window
is mir_eval's default 70 ms; continuity uses mir_eval's default 17.5 % phase and period tolerance.
An item whose estimate is missing scores 0 on every metric.

Metrics
-------
- :func:`beat_scores`: F-measure, CMLt and AMLt for one item.
- :func:`evenly_spaced_beats`: the trivial baseline: beats every ``60/tempo`` s from 0 s to the
  last reference beat, at the median tempo of the reference set (no phase information).
"""
from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np


def beat_scores(reference: np.ndarray, estimate: np.ndarray | None) -> dict[str, float]:
    """``{"f_measure", "cmlt", "amlt"}`` for one item (0 where the estimate is ``None``).

    References
    ----------
    Davies, Degara & Plumbley, "Evaluation methods for musical audio beat tracking algorithms",
    QMUL C4DM-TR-09-06, 2009; mir_eval.beat.
    """
    import mir_eval

    if estimate is None:
        return {"f_measure": 0.0, "cmlt": 0.0, "amlt": 0.0}
    reference = np.asarray(reference, dtype=float)
    estimate = np.asarray(estimate, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mir_eval warns on empty arrays; the score is 0 then
        f = float(mir_eval.beat.f_measure(reference, estimate))
        _, cmlt, _, amlt = mir_eval.beat.continuity(reference, estimate)
    return {"f_measure": f, "cmlt": float(cmlt), "amlt": float(amlt)}


def median_tempo(references: Sequence[np.ndarray]) -> float:
    """Median over items of 60 / median inter-beat interval (BPM); items with < 2 beats skipped."""
    tempi = [60.0 / float(np.median(np.diff(r))) for r in references if len(r) >= 2 and np.median(np.diff(r)) > 0]
    if not tempi:
        raise ValueError("no reference with two or more beats to estimate a tempo from")
    return float(np.median(tempi))


def evenly_spaced_beats(end: float, tempo_bpm: float, *, start: float = 0.0) -> np.ndarray:
    """Beats every ``60 / tempo_bpm`` s from ``start`` up to and including ``end``.

    The scorer passes the last reference beat as ``end`` (clip lengths are not in the output files).

    >>> evenly_spaced_beats(2.0, 120).tolist()
    [0.0, 0.5, 1.0, 1.5, 2.0]
    """
    if tempo_bpm <= 0:
        raise ValueError(f"tempo must be positive, got {tempo_bpm}")
    period = 60.0 / tempo_bpm
    return start + period * np.arange(int(np.floor((end - start) / period + 1e-9)) + 1)
