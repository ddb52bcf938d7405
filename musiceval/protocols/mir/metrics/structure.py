"""Song-structure analysis (SongFormBench): sections read from the answer against the reference's.

Metrics, per item then averaged (``song_structure_analysis`` of ``evaluate.py`` at
nicolaus625/CMI-bench@35235cb, with ``mir_eval.segment``): ``boundary_f1_05s`` and ``boundary_f1_3s``
(boundary detection F-measure within 0.5 s and 3 s, first and last boundary trimmed), ``pairwise_f1``
(frame-pair label agreement), ``rand_index``, ``ari`` (adjusted Rand index), and the median boundary
deviations ``deviation_ref_to_est`` and ``deviation_est_to_ref`` in seconds (lower is better).

The reference's sections are made contiguous from its first start to its last end (gaps "unknown");
the answer's are clipped to that span with gaps "unknown", and both shifted to start at 0
(:func:`musiceval.parsers.sections.to_intervals`). An item whose reference cannot be read is left out
by default; the toolkit scores it 0 on every metric, which ``compat`` reproduces.

An unreadable answer (no section read): the toolkit (``compat``) scores every metric 0, deviations
included, so an unreadable answer gets the best possible deviation; by default it is scored as the
answer that names no boundary (one "unknown" section over the whole reference: its boundary F1 is
0, its pairwise F1, Rand index and ARI are what such an answer earns) and its deviations are
undefined, left out of the means and counted in a note. That single section is also the trivial
baseline. A deviation is undefined (NaN) wherever either side has no inner boundary; the toolkit's
mean is then NaN, which ``compat`` reproduces.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from musiceval.records import ItemFailure
from musiceval.schemas import OutputRecord

METRICS = ("boundary_f1_05s", "boundary_f1_3s", "pairwise_f1", "rand_index", "ari", "deviation_ref_to_est",
           "deviation_est_to_ref")
#: metrics where a smaller value is better
LOWER_IS_BETTER = ("deviation_ref_to_est", "deviation_est_to_ref")


def structure_scores(reference: list, estimate: list) -> dict[str, float]:
    """Every metric of one item from its reference and estimated ``(start, end, label)`` sections.

    Raises ``ValueError`` (mir_eval's) where the intervals cannot be scored.

    >>> ref = [(0.0, 10.0, "intro"), (10.0, 30.0, "verse")]
    >>> s = structure_scores(ref, [(0.0, 10.2, "intro"), (10.2, 30.0, "chorus")])
    >>> s["boundary_f1_05s"], round(s["deviation_ref_to_est"], 3)
    (1.0, 0.2)
    """
    import mir_eval

    from musiceval.parsers.sections import to_intervals

    ref_iv, ref_lab = to_intervals(reference)
    start, end = float(ref_iv[0, 0]), float(ref_iv[-1, 1])
    est_iv, est_lab = to_intervals(estimate, start, end)
    ref_iv, est_iv = ref_iv - start, est_iv - start
    f05 = mir_eval.segment.detection(ref_iv, est_iv, window=0.5, trim=True)[2]
    f3 = mir_eval.segment.detection(ref_iv, est_iv, window=3.0, trim=True)[2]
    pair = mir_eval.segment.pairwise(ref_iv, ref_lab, est_iv, est_lab)[2]
    rand = mir_eval.segment.rand_index(ref_iv, ref_lab, est_iv, est_lab)
    ari = mir_eval.segment.ari(ref_iv, ref_lab, est_iv, est_lab)
    r2e, e2r = mir_eval.segment.deviation(ref_iv, est_iv, trim=True)
    return dict(zip(METRICS, (float(f05), float(f3), float(pair), float(rand), float(ari), float(r2e), float(e2r))))


def no_boundary(reference: list) -> list:
    """The answer that names no boundary: one "unknown" section over the reference's span."""
    return [(min(s for s, _, _ in reference), max(e for _, e, _ in reference), "unknown")]


def structure_table(records: Sequence[OutputRecord], compat: str | None) -> dict:
    """Per-item values of every metric (model and baseline), the items kept, failures and notes."""
    import warnings

    from musiceval.parsers.sections import read_sections

    table: dict[str, list[float]] = {m: [] for m in METRICS}
    base: dict[str, list[float]] = {m: [] for m in METRICS}
    keep, failures, notes = [], [], []
    for r in records:
        reference = read_sections(r.correct_answer)
        if not reference:
            what = f"reference unreadable as (start, end, label) sections: {r.correct_answer[:60]!r}"
            if compat:  # the toolkit scores the item 0 on every metric, in the denominator
                keep.append(True)
                failures.append(ItemFailure(r.item_id, f"{what}; scored 0 on every metric (toolkit rule)"))
                for m in METRICS:
                    table[m].append(0.0)
                    base[m].append(0.0)
                continue
            keep.append(False)
            failures.append(ItemFailure(r.item_id, f"{what}; item left out"))
            continue
        keep.append(True)
        estimate = read_sections(r.response)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # mir_eval warns on an estimate without boundaries
            baseline = structure_scores(reference, no_boundary(reference))
            if not estimate:
                failures.append(ItemFailure(r.item_id, "no (start, end, label) section read, scored "
                                            + ("0 on every metric (toolkit rule)" if compat else "as naming no boundary")
                                            + f": {r.response[:60]!r}"))
                values = dict.fromkeys(METRICS, 0.0) if compat else {**baseline, **dict.fromkeys(LOWER_IS_BETTER, float("nan"))}
            else:
                try:
                    values = structure_scores(reference, estimate)
                except ValueError as exc:
                    failures.append(ItemFailure(r.item_id, f"sections not scorable ({exc}), scored 0 on every metric"))
                    values = dict.fromkeys(METRICS, 0.0)
        for m in METRICS:
            table[m].append(values[m])
            base[m].append(baseline[m])
    if not any(read_sections(r.correct_answer) for r, k in zip(records, keep) if k):
        from musiceval.protocols.mir.metrics.families import TaskError

        raise TaskError(f"none of the {len(records)} references (correct_answer) is readable as (start, end, label) "
                        "sections; check the file's correct_answer fields")
    undefined = sum(np.isnan(v) for v in table["deviation_ref_to_est"])
    if undefined and not compat:
        notes.append(f"{undefined} items have no defined boundary deviation (no inner boundary on one side), left out "
                     "of the deviation means")
    return {"table": table, "baseline": base, "keep": keep, "failures": failures, "notes": notes}


def mean(values: Sequence[float], compat: str | None) -> float:
    """The toolkit's ``np.mean`` (NaN if any value is) in ``compat``; else the mean of the defined values."""
    arr = np.asarray(values, dtype=float)
    if compat:
        return float(arr.mean()) if len(arr) else float("nan")
    arr = arr[~np.isnan(arr)]
    return float(arr.mean()) if len(arr) else float("nan")
