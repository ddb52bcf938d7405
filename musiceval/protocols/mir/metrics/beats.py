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
- :func:`metronome_baseline`: that baseline scored per item. It depends on the references and the
  tempo only, never on the model's answers, so its table is memoised by :func:`baseline_key`
  (in this process, and in an optional store such as the scorer's on-disk one): a second model,
  condition or run over the same references reuses it instead of re-running ``mir_eval``.
"""
from __future__ import annotations

import hashlib
import warnings
from collections import OrderedDict
from typing import Any, Sequence

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


#: bump when the metronome baseline's definition changes: memoised tables are keyed by it
METRONOME_VERSION = "metronome-1"
METRICS = ("f_measure", "cmlt", "amlt")
_RECENT: "OrderedDict[str, dict[str, list[float]]]" = OrderedDict()
_RECENT_MAX = 64


def baseline_key(references: Sequence[np.ndarray], tempo_bpm: float) -> str:
    """sha256 naming a metronome baseline table: its definition, the ``mir_eval`` version, the
    tempo (exact ``repr``) and every reference beat array (float64 bytes, in order)."""
    import mir_eval

    h = hashlib.sha256(f"{METRONOME_VERSION}|mir_eval {mir_eval.__version__}|{float(tempo_bpm)!r}".encode())
    for ref in references:
        a = np.ascontiguousarray(np.asarray(ref, dtype="<f8"))
        h.update(f"|{a.size}:".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _valid(table: Any, n: int) -> dict[str, list[float]] | None:
    if not isinstance(table, dict) or set(table) != set(METRICS):
        return None
    if any(not isinstance(v, list) or len(v) != n or not all(isinstance(x, float) for x in v) for v in table.values()):
        return None
    return table


def metronome_baseline(references: Sequence[np.ndarray], tempo_bpm: float, *, memo: Any = None) -> dict[str, list[float]]:
    """``{"f_measure", "cmlt", "amlt"}`` lists, one value per reference: :func:`beat_scores` of
    :func:`evenly_spaced_beats` from 0 s to the last reference beat at ``tempo_bpm`` (an empty
    reference scores against no beats).

    The table is a function of ``references`` and ``tempo_bpm`` alone, so it is computed once per
    :func:`baseline_key`: kept in this process (the last 64 tables) and, when ``memo`` is given
    (an object with ``get(key)`` and ``memo[key] = table``), read from and written to it. A stored
    table of the wrong shape is recomputed. Values are ``mir_eval``'s own floats either way.
    """
    key = baseline_key(references, tempo_bpm)
    table = _RECENT.get(key)
    if table is None and memo is not None:
        table = _valid(memo.get(key), len(references))
    if table is None:
        table = {m: [] for m in METRICS}
        for ref in references:
            metronome = evenly_spaced_beats(float(ref[-1]), tempo_bpm) if len(ref) else np.zeros(0)
            for m, v in beat_scores(ref, metronome).items():
                table[m].append(v)
        if memo is not None:
            memo[key] = table
    _RECENT[key] = table
    _RECENT.move_to_end(key)
    while len(_RECENT) > _RECENT_MAX:
        _RECENT.popitem(last=False)
    return {m: list(v) for m, v in table.items()}
