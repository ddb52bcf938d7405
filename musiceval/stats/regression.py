"""The one comparison engine: a new run against a baseline, paired by item, decided by the interval.

Every comparison of two runs goes through :func:`compare_scores`: the pytest regression gates
(``musiceval/evals/regression.py`` via :meth:`musiceval.gates.Gate.regression`), ``musiceval compare``
and :func:`musiceval.results.compare` (both via :func:`musiceval.results.comparison.compare_runs`). So a
comparison printed by the CLI and the regression gate of a pytest run are one computation and
agree row for row.

The two scores are joined by item id, the difference is oriented so that positive means "new is
better" (``new - old``, or ``old - new`` when lower is better: WER, error rates), and both claims are
decided on the calibrated interval of :func:`musiceval.stats.intervals.paired_interval` (Tango + exact
McNemar for 0/1 outcomes, Obuchowski's clustered form for 0/1 outcomes clustered by track, Hall's
skew-corrected t otherwise, clustered by track via CR1 units; 0/1 outcomes and the metric's known
range are the metric's declared ``scale``, :mod:`musiceval.stats.scales`, read from the values only
when none is passed):

- **non-inferiority** (the release gate): bar ``-margin``; PASS iff the interval's lower bound is
  above it, FAIL iff its upper bound is below it, INCONCLUSIVE otherwise, with about how many items
  would decide it;
- **superiority** (reported beside it): bar ``+margin`` (0 by default); PASS iff the lower bound is
  above it.

The minimum detectable effect (MDE) at the run's power is stated as advice and never overrides a
decided interval (a +33-point gain whose interval is [+32, +35] is superior whatever the power).
When both runs score the same on every paired item (identical exact proportions such as a parse
rate of 1.000 against 1.000) the difference is exactly 0: non-inferior, not superior, decided
without an interval.

The one-word ``verdict`` of a comparison: ``superior`` (superiority PASS), ``non-inferior``
(non-inferiority PASS), ``inferior`` (non-inferiority FAIL) or ``inconclusive``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from musiceval import stats
from musiceval.records import GateResult, ItemScores, Outcome
from musiceval.stats import intervals
from musiceval.stats.pairing import align_paired
from musiceval.stats.scales import Scale, describe

#: how many unmatched ids a detail line names before it says "+N more"
NAMED_IDS = 5
VERDICTS = ("superior", "non-inferior", "inferior", "inconclusive")


@dataclass(frozen=True)
class Comparison:
    """Both claims about one (new, old) pair and the one word that sums them up."""

    non_inferior: GateResult
    superior: GateResult
    verdict: str


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
    """``with 334 items this gate detects drops of 4.1 points at power 0.8`` (advice, never a verdict)."""
    where = f"with {n} items" + (f" in {clusters} clusters" if clusters else "")
    what = "drops" if kind == "non_inferior" else "gains"
    if not math.isfinite(mde):
        return f"{where} this gate cannot detect {what} of any size (too few items to estimate their spread)"
    return f"{where} this gate detects {what} of {say_effect(mde, points)}"


def verdict_word(non_inferior: GateResult, superior: GateResult) -> str:
    """superior / non-inferior / inferior / inconclusive, from the two decided claims."""
    if superior.outcome is Outcome.PASS:
        return "superior"
    if non_inferior.outcome is Outcome.PASS:
        return "non-inferior"
    if non_inferior.outcome is Outcome.FAIL:
        return "inferior"
    return "inconclusive"


def compare_scores(
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
    superiority_margin: float = 0.0,
    scale: Scale | None = None,
) -> Comparison:
    """Non-inferiority at ``margin`` and superiority at ``superiority_margin`` of ``new`` over
    ``old`` (see the module docstring). The non-inferiority result's detail names the superiority
    outcome and the one-word verdict."""
    common = dict(name=name, higher_is_better=higher_is_better, new_label=new_label, old_label=old_label,
                  protocol=protocol, metric=metric, alpha=alpha, power=power, baseline=baseline, scale=scale)
    ni = regression_result("non_inferior", new, old, margin=margin, **common)
    sup = regression_result("superior", new, old, margin=superiority_margin, **common)
    word = verdict_word(ni, sup)
    claim = f"superiority: {sup.outcome.value}" + (f" (bar +{superiority_margin:g})" if superiority_margin else "")
    ni = replace(ni, detail=f"{ni.detail}; {claim}; verdict {word}", verdict=word)
    return Comparison(ni, sup, word)


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
    scale: Scale | None = None,
) -> GateResult:
    """The :class:`GateResult` of one claim, ``non_inferior`` or ``superior`` (see the module docstring)."""
    if kind not in ("non_inferior", "superior"):
        raise ValueError(f"kind must be 'non_inferior' or 'superior', got {kind!r}")
    if not math.isfinite(margin) or margin < 0:
        raise ValueError(f"{name}: margin must be a finite number >= 0 in the metric's units, got {margin}")

    metric = metric or new.metric
    if scale is not None:
        scale.check(new.values, old.values, metric=metric)
    va, vb, groups, _ = align_paired(new, old)
    n_unmatched, unmatched_note = unmatched(new, old, new_label, old_label)
    n_failed = len(new.failures) + len(old.failures) + n_unmatched
    bar = -margin if kind == "non_inferior" else margin
    direction = "higher is better" if higher_is_better else "lower is better"
    where = f" on {protocol} {metric}" if protocol else f" on {metric}"
    common = dict(name=name, threshold=bar, bar=bar, protocol=protocol, metric=metric, n_failed=n_failed,
                  baseline=baseline or old_label, scale=describe(scale, *(v for v in (va, vb) if v.size)))
    if va.size == 0:
        detail = f"no item scored in both {new_label} and {old_label}: nothing to compare"
        return GateResult(outcome=Outcome.INCONCLUSIVE, estimate=math.nan, ci=(math.nan, math.nan), p_value=None, n=0,
                          test=f"{kind} ({direction})", detail="; ".join(filter(None, [detail, unmatched_note])),
                          **common)
    better, worse = (va, vb) if higher_is_better else (vb, va)
    diff = better - worse
    points = scale.bounds == (0.0, 1.0) if scale is not None else in_points(va, vb)
    clustered = groups if intervals.has_clusters(groups) else None
    n_clusters = len(set(groups)) if clustered is not None and groups is not None else None
    if np.array_equal(va, vb):
        outcome = Outcome.PASS if (kind == "non_inferior" or bar < 0) else Outcome.FAIL
        notes = [f"{new_label} and {old_label} score identically on every one of the {va.size} paired items"
                 f"{where}: the difference is exactly 0 ({'non-inferior' if kind == 'non_inferior' else 'not superior'})"]
        if unmatched_note:
            notes.append(unmatched_note)
        return GateResult(outcome=outcome, estimate=0.0, ci=(0.0, 0.0), p_value=None, n=int(va.size),
                          test=f"{kind} ({direction}): exact, identical on every item", detail="; ".join(notes), mde=0.0,
                          **common)
    bound = intervals.paired_interval(better, worse, groups=groups, alpha=alpha, margin=bar, scale=scale)
    mde = stats.minimum_detectable_effect(diff, clusters=clustered, alpha=alpha, power=power)
    outcome = stats.decide((bound.low, bound.high), bar)
    notes = [f"{new_label} {va.mean():.3f} vs {old_label} {vb.mean():.3f}{where}"
             f" ({direction}; {'gain' if diff.mean() >= 0 else 'drop'} {say_effect(abs(float(diff.mean())), points)},"
             f" {int((1 - alpha) * 100)}% interval [{say_effect(bound.low, points)}, {say_effect(bound.high, points)}]"
             f" vs bar {say_effect(bar, points)})"]
    n_to_decide = None
    if outcome is Outcome.INCONCLUSIVE:  # advice only: the interval decides
        n_to_decide = stats.items_to_decide((bound.low, bound.high), float(diff.mean()), bar, int(diff.size))
        if n_to_decide is not None:
            notes.append(f"about {n_to_decide} items (same design) would decide it")
        notes.append(f"MDE advice: {power_sentence(int(diff.size), mde, points, kind, n_clusters)} at power {power:g}")
    if unmatched_note:
        notes.append(unmatched_note)
    return GateResult(outcome=outcome, estimate=float(diff.mean()), ci=(bound.low, bound.high), p_value=bound.p_value,
                      n=int(diff.size), test=f"{kind} ({direction}): {bound.method}; shape={bound.shape}",
                      detail="; ".join(notes), mde=mde, n_to_decide=n_to_decide, **common)
