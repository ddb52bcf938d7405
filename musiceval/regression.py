"""Regression gates against a baseline run: paired non-inferiority and superiority with power.

:meth:`musiceval.gates.Gate.non_inferior` and :meth:`~musiceval.gates.Gate.superior` delegate
here. Both join the two runs' per-item scores by item id, orient the difference so that positive
means "new is better" (``new - old``, or ``old - new`` when lower is better: WER, error rates),
and decide on the calibrated interval of :func:`musiceval.intervals.paired_interval` (Tango +
exact McNemar for 0/1 outcomes, Obuchowski's clustered form for 0/1 outcomes clustered by track,
Hall's skew-corrected t otherwise, clustered by track via CR1 units).

- ``non_inferior``: bar ``-margin``; PASS when the interval's lower bound is above it, FAIL when
  the upper bound is below it, INCONCLUSIVE otherwise. Power before verdict: when the margin is
  smaller than the minimum detectable effect (:func:`musiceval.stats.minimum_detectable_effect`)
  a PASS becomes INCONCLUSIVE and the detail says what the gate can detect. A FAIL stays a FAIL:
  a drop beyond the margin was seen even with little power.
- ``superior``: bar ``+margin``; PASS when the lower bound is above it. A superiority PASS
  controls its error rate whatever the power, so the MDE is reported, never used to downgrade.

The estimate, interval and threshold of the result are on the oriented scale (positive = better).
"""
from __future__ import annotations

import math
import numpy as np

from musiceval import intervals, stats
from musiceval.records import GateResult, ItemScores, Outcome, align_paired

#: how many unmatched ids a detail line names before it says "+N more"
NAMED_IDS = 5


def unmatched(new: ItemScores, old: ItemScores, new_label: str = "new", old_label: str = "old") -> tuple[int, str]:
    """Count and describe the items present in only one run (never dropped silently)."""
    new_ids, old_ids = set(new.ids), set(old.ids)
    parts = []
    for label, ids in ((new_label, sorted(new_ids - old_ids)), (old_label, sorted(old_ids - new_ids))):
        if ids:
            more = f" (+{len(ids) - NAMED_IDS} more)" if len(ids) > NAMED_IDS else ""
            parts.append(f"{len(ids)} only in {label}: {', '.join(ids[:NAMED_IDS])}{more}")
    return len(new_ids ^ old_ids), "; ".join(parts)


def in_points(*values: np.ndarray) -> bool:
    """True when the metric lives in [0, 1] (accuracy, F1, BLEU): effects are then said in
    points (x100); other metrics (WER can exceed 1, cents, seconds) keep their own units."""
    return all(v.size == 0 or (float(v.min()) >= 0 and float(v.max()) <= 1) for v in values)


def say_effect(x: float, points: bool) -> str:
    """An effect in the metric's units: ``4.1 points`` for [0, 1] metrics, ``0.083`` otherwise."""
    if not math.isfinite(x):
        return "no effect at all (no spread estimate)"
    return f"{100 * x:.1f} points" if points else f"{x:.3g}"


def power_sentence(n: int, mde: float, points: bool, kind: str, clusters: int | None = None) -> str:
    """``with 334 items this gate can only detect drops of 4.1 points`` (the sentence verdicts print)."""
    where = f"with {n} items" + (f" in {clusters} clusters" if clusters else "")
    what = "drops" if kind == "non_inferior" else "gains"
    if not math.isfinite(mde):
        return f"{where} this gate cannot detect {what} of any size (too few items to estimate their spread)"
    return f"{where} this gate can only detect {what} of {say_effect(mde, points)}"


def regression_result(
    kind: str,
    new: ItemScores,
    old: ItemScores,
    *,
    margin: float,
    name: str,
    higher_is_better: bool = True,
    new_label: str = "new",
    old_label: str = "old",
    protocol: str = "",
    metric: str = "",
    alpha: float = 0.05,
    power: float = 0.8,
    baseline: str = "",
) -> GateResult:
    """The :class:`GateResult` of a ``non_inferior`` or ``superior`` gate (see module docstring)."""
    if kind not in ("non_inferior", "superior"):
        raise ValueError(f"kind must be 'non_inferior' or 'superior', got {kind!r}")
    if not math.isfinite(margin) or margin < 0:
        raise ValueError(f"{name}: margin must be a finite number >= 0 in the metric's units, got {margin}")

    metric = metric or new.metric
    va, vb, groups, _ = align_paired(new, old)
    n_unmatched, unmatched_note = unmatched(new, old, new_label, old_label)
    n_failed = len(new.failures) + len(old.failures) + n_unmatched
    bar = -margin if kind == "non_inferior" else margin
    direction = "higher is better" if higher_is_better else "lower is better"
    where = f" on {protocol} {metric}" if protocol else f" on {metric}"
    if va.size == 0:
        detail = f"no item scored in both {new_label} and {old_label}: nothing to compare"
        return GateResult(
            name=name, outcome=Outcome.INCONCLUSIVE, estimate=math.nan, ci=(math.nan, math.nan), p_value=None, n=0,
            threshold=bar, test=f"{kind} ({direction})", protocol=protocol, metric=metric, n_failed=n_failed,
            detail="; ".join(filter(None, [detail, unmatched_note])), baseline=baseline or old_label,
        )
    better, worse = (va, vb) if higher_is_better else (vb, va)
    bound = intervals.paired_interval(better, worse, groups=groups, alpha=alpha, margin=bar)
    diff = better - worse
    clustered = groups if intervals.has_clusters(groups) else None
    mde = stats.minimum_detectable_effect(diff, clusters=clustered, alpha=alpha, power=power)
    outcome = stats.decide((bound.low, bound.high), bar)
    points = in_points(va, vb)
    n_clusters = len(set(groups)) if clustered is not None and groups is not None else None
    sentence = power_sentence(int(diff.size), mde, points, kind, n_clusters)
    underpowered = kind == "non_inferior" and margin < mde
    notes = [f"{new_label} {va.mean():.3f} vs {old_label} {vb.mean():.3f}{where}"
             f" ({direction}; {'gain' if diff.mean() >= 0 else 'drop'} {say_effect(abs(float(diff.mean())), points)},"
             f" {int((1 - alpha) * 100)}% interval [{say_effect(bound.low, points)}, {say_effect(bound.high, points)}]"
             f" vs bar {say_effect(bar, points)})"]
    if underpowered:
        if kind == "non_inferior" and outcome is Outcome.PASS:
            outcome = Outcome.INCONCLUSIVE
        notes.append(f"underpowered: {sentence}, margin is {say_effect(margin, points)}")
    elif kind == "superior" and outcome is not Outcome.PASS:
        notes.append(sentence + f" above the bar at power {power:g}")
    else:
        notes.append(f"MDE {say_effect(mde, points)} at power {power:g}")
    if unmatched_note:
        notes.append(unmatched_note)
    return GateResult(
        name=name, outcome=outcome, estimate=float(diff.mean()), ci=(bound.low, bound.high), p_value=bound.p_value,
        n=int(diff.size), threshold=bar, test=f"{kind} ({direction}): {bound.method}; shape={bound.shape}",
        protocol=protocol, metric=metric, n_failed=n_failed, detail="; ".join(notes), mde=mde,
        baseline=baseline or old_label,
    )

