"""Headline numbers of ``musiceval score`` with the interval and n the gates use.

Each protocol hands the CLI the per-item scores of its headline metrics on Correct
(:attr:`~musiceval.protocols.scoring.ScoreReport.headline`), the chance levels of those metrics
(``chances``, :func:`musiceval.protocols.scoring.chance_rows`) and paired condition contrasts
(``paired``, e.g. free-form Correct vs Random).
This module turns them into ``{estimate, low, high, n, n_failed, method}`` with
:meth:`musiceval.gates.Gate.interval`: the calibrated interval every gate reports, whole track
clusters resampled when items share a group, seeded from ``--seed`` and the metric name.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from musiceval.records import ItemScores
from musiceval.stats.pairing import align_paired
from musiceval.stats.scales import Scale

#: failure reasons of items that are scored (by the protocol's rule for an unreadable answer)
IMPUTED = ("unparsed", "imputed")


def _gate(seed: int):
    from musiceval.gates import Gate, GateConfig

    return Gate(GateConfig(seed=seed))


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def interval_of(scores: ItemScores, *, seed: int = 0, name: str, scale: Scale | None = None) -> dict[str, Any]:
    """Mean of ``scores`` with the gates' interval: ``{estimate, low, high, n, n_failed, n_unparsed,
    method}`` (``n_unparsed``: answers scored by the protocol's rule although unreadable)
    (``low``/``high`` None when there are too few items for a finite interval). ``scale``: the
    metric's declaration (:mod:`musiceval.stats.scales`), as the gates pass it."""
    reasons = {f.item_id: f.reason for f in scores.failures}
    # scored by an imputation rule (an unparsed answer counted wrong) vs not scored at all
    n_unparsed = sum(r.startswith(IMPUTED) for r in reasons.values())
    base = {"n_failed": len(reasons) - n_unparsed, "n_unparsed": n_unparsed}
    if not scores.n:
        return {"estimate": None, "low": None, "high": None, "n": 0, **base, "method": "no scored item"}
    ci = _gate(seed).interval(scores.values, scores.groups, name=name, scale=scale)
    return {"estimate": float(scores.values.mean()), "low": _finite(ci.low), "high": _finite(ci.high), "n": scores.n,
            **base, "method": ci.method}


def paired_difference(a: ItemScores, b: ItemScores, *, seed: int = 0, name: str,
                      scale: Scale | None = None) -> dict[str, Any]:
    """``mean(a - b)`` on the items both scored, with the gates' interval (clustered by ``a``'s
    groups): ``{estimate, low, high, n, method}`` (:meth:`Gate.paired_finding`'s numbers)."""
    va, vb, groups, _ = align_paired(a, b)
    diff = va - vb
    if not diff.size:
        return {"estimate": None, "low": None, "high": None, "n": 0, "method": "no item scored under both"}
    ci = _gate(seed).interval(diff, groups, name=name, scale=scale.difference() if scale is not None else None)
    return {"estimate": float(diff.mean()), "low": _finite(ci.low), "high": _finite(ci.high), "n": int(diff.size),
            "method": ci.method}


def summarize(protocol: str, headline: Mapping[str, ItemScores], paired: Mapping[str, tuple[ItemScores, ItemScores]],
              *, seed: int = 0, on_metric=None, scales: Mapping[str, Scale] | None = None
              ) -> tuple[dict[str, dict], dict[str, dict]]:
    """Intervals of every headline metric and every paired contrast (``on_metric()`` after each), on
    each metric's declared scale in ``scales`` (read from the values for a metric left out)."""
    scales = scales or {}
    intervals, diffs = {}, {}
    for metric, scores in headline.items():
        intervals[metric] = interval_of(scores, seed=seed, name=f"{protocol}:{metric}", scale=scales.get(metric))
        if on_metric:
            on_metric()
    for metric, (a, b) in paired.items():
        diffs[metric] = paired_difference(a, b, seed=seed, name=f"{protocol}:{metric}:{a.condition}-{b.condition}",
                                          scale=scales.get(metric))
        if on_metric:
            on_metric()
    return intervals, diffs


def _num(x: float | None) -> str:
    return "nan" if x is None else f"{x:.4f}"


def _ci(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "[interval needs more items]"
    return f"[{low:.3f}, {high:.3f}]"


def _kind(method: str) -> str:
    return "calibrated interval" if method.startswith("skew") else (method.split(";")[0] or "interval")


def headline_lines(intervals: Mapping[str, dict], chances: Mapping[str, list[dict]] | None = None) -> list[str]:
    """``accuracy  0.6850  [0.620, 0.745]  n=200  (calibrated interval; 1 unparsed)`` per metric,
    then the metric's chance levels and trivial baselines."""
    width = max((len(m) for m in intervals), default=0)
    lines = []
    for metric, iv in intervals.items():
        note = _kind(iv["method"]) + (f"; {iv['n_unparsed']} unparsed" if iv.get("n_unparsed") else "") \
            + (f"; {iv['n_failed']} not scored" if iv.get("n_failed") else "")
        line = f"  {metric:<{width}}  {_num(iv['estimate'])}  {_ci(iv['low'], iv['high'])}  n={iv['n']}  ({note})"
        for c in (chances or {}).get(metric, []):
            line += f"\n  {'':<{width}}    vs {c['name']}: {c['value']:.4f}"
        lines.append(line)
    return lines


def paired_lines(diffs: Mapping[str, dict], a: str = "correct", b: str = "random") -> list[str]:
    width = max((len(m) for m in diffs), default=0)
    return [f"  {metric:<{width}}  {_num(d['estimate'])}  {_ci(d['low'], d['high'])}  n={d['n']}  "
            f"({a} - {b} on the items both scored; {_kind(d['method'])})" for metric, d in diffs.items()]
