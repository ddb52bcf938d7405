"""The statistical test behind each gate of :class:`musiceval.gates.Gate`, as pure functions.

Each gate has one function of the same name (:func:`paired_greater`, :func:`mcnemar_greater`,
:func:`greater_than_chance`, :func:`beats_permutation_null`, :func:`binomial_greater`,
:func:`at_least`) that takes the :class:`~musiceval.records.ItemScores` the gate was handed, pairs
them by item id where the test is paired, decides the cases that need no interval (no scored item;
two conditions identical on every item; a permutation null that cannot move) and otherwise runs
the test on the per-item arrays. It returns the finished :class:`~musiceval.records.GateResult`;
the gate only records it (with the run's nodeid and alpha, and the inputs it consumed). The
array-level tests below them each return a :class:`Decision` (estimate, interval, p-value, the
test's name and the outcome by :func:`~musiceval.stats.core.decide`).

Every function takes the run's :class:`Settings` (alpha, resamples, interval method) and the
gate's own seed, and the metric's declared :class:`~musiceval.stats.scales.Scale` (``scale``: 0/1
outcomes or numbers in a known range; docs/regression-gates.md, "Binary or continuous: the metric
declares it"). The declaration, not the values, picks a proportion's interval and the range an
interval is bounded by; the values are checked against it (a metric declared binary with a value
other than 0 or 1 is an error naming the metric). Without a declaration the scale is read from
the values, and :attr:`~musiceval.records.GateResult.scale` says so. With ``ci_method="auto"`` (the default) the interval is the calibrated one for
the data's shape (:mod:`musiceval.stats.intervals`); ``"bca"`` and ``"percentile"`` select the
bootstrap, whole clusters resampled when items share a group, with a sign-flip test for the
p-value (docs/regression-gates.md, "Intervals: which one each gate uses and why").
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from musiceval.records import GateResult, ItemScores, Outcome
from musiceval.stats import intervals
from musiceval.stats.intervals import has_clusters
from musiceval.stats.bootstrap import paired_bootstrap_ci
from musiceval.stats.core import Interval, decide
from musiceval.stats.exact import mcnemar_exact, sign_flip_test
from musiceval.stats.pairing import align_paired
from musiceval.stats.permutation import permutation_p_value
from musiceval.stats.scales import Scale, describe


@dataclass(frozen=True)
class Settings:
    """What every gate test of a run shares (:class:`musiceval.gates.GateConfig` carries them)."""

    alpha: float = 0.05
    n_resamples: int = 10_000
    #: "auto" (the calibrated interval for the data's shape), "bca" or "percentile" (bootstrap)
    ci_method: str = "auto"

    @property
    def calibrated(self) -> bool:
        return self.ci_method == "auto"


@dataclass(frozen=True)
class Decision:
    """A test's result: ``estimate`` against ``bar`` with its two-sided ``1 - alpha`` interval."""

    estimate: float
    ci: Interval
    p_value: float | None
    test: str
    bar: float
    outcome: Outcome


def _diff(scale: Scale | None) -> Scale | None:
    return scale.difference() if scale is not None else None


def _shift(scale: Scale | None, by: float) -> Scale | None:
    return scale.shifted(by) if scale is not None else None


def exact_mean(values: np.ndarray) -> float:
    """The mean by ``math.fsum``: the same for any order of the items (``ItemScores.mean``)."""
    return math.fsum(values.tolist()) / values.size


def mean_interval(values: np.ndarray, groups: Sequence[str] | None, settings: Settings, seed: int,
                  scale: Scale | None = None) -> Interval:
    """The interval of ``mean(values)`` every gate reports: calibrated for the data's shape (the
    values' declared ``scale``), or the bootstrap (clustered when items share a group)."""
    if settings.calibrated:
        bnd = intervals.one_sample_interval(values, groups=groups, alpha=settings.alpha, scale=scale)
        return Interval(bnd.low, bnd.high, f"{bnd.method}; shape={bnd.shape}")
    return paired_bootstrap_ci(values, groups=groups if has_clusters(groups) else None, alpha=settings.alpha,
                               n_resamples=settings.n_resamples, seed=seed, method=settings.ci_method)


def paired_difference(va: np.ndarray, vb: np.ndarray, groups: Sequence[str] | None, *, margin: float,
                      settings: Settings, seed: int, scale: Scale | None = None) -> Decision:
    """``mean(a - b) > margin`` on paired items: the calibrated paired interval
    (:func:`musiceval.stats.intervals.paired_interval`; fewer than 20 clusters: the exact cluster
    sign-flip test), or the paired bootstrap and a sign-flip test."""
    diff = va - vb
    if settings.calibrated:
        bnd = intervals.paired_interval(va, vb, groups=groups, alpha=settings.alpha, margin=margin, scale=scale)
        ci, p, test = Interval(bnd.low, bnd.high, f"{bnd.method}; shape={bnd.shape}"), bnd.p_value, "paired calibrated interval"
    else:
        ci = mean_interval(diff, groups, settings, seed, _diff(scale))
        p = sign_flip_test(diff - margin, groups=groups if has_clusters(groups) else None,
                           n_resamples=settings.n_resamples, seed=seed)
        test = "paired bootstrap CI + sign-flip test"
    return Decision(float(diff.mean()), ci, p, f"{test} ({ci.method})", margin, decide(ci, margin))


def mean_above(values: np.ndarray, groups: Sequence[str] | None, level: float, *, settings: Settings,
               seed: int, scale: Scale | None = None) -> Decision:
    """``mean(values) > level`` for a known level (chance): the calibrated one-sample interval, or
    a bootstrap interval of the mean and a sign-flip test of ``values - level``. The estimate is
    the mean minus the level."""
    diff = values - level
    if settings.calibrated:
        bnd = intervals.one_sample_interval(values, groups=groups, alpha=settings.alpha, margin=level, scale=scale)
        ci, p = Interval(bnd.low - level, bnd.high - level, f"{bnd.method}; shape={bnd.shape}"), bnd.p_value
        test = "calibrated interval vs fixed chance"
    else:
        ci = mean_interval(diff, groups, settings, seed, _shift(scale, -level))
        p = sign_flip_test(diff, groups=groups if has_clusters(groups) else None, n_resamples=settings.n_resamples,
                           seed=seed)
        test = "bootstrap CI vs fixed chance + sign-flip test"
    return Decision(float(diff.mean()), ci, p, f"{test} ({ci.method})", 0.0, decide(ci, 0.0))


def mean_above_permutation_null(values: np.ndarray, groups: Sequence[str] | None, null: np.ndarray, *,
                                settings: Settings, seed: int, scale: Scale | None = None) -> Decision:
    """``mean(values)`` above the chance level estimated by permutation (``null``: the mean score
    of each permutation of the item-label link). Estimate and interval: of the mean minus the
    null's mean; p-value: the Monte Carlo permutation p-value, which takes items as exchangeable;
    with items sharing a group (questions about one clip, sampled answers to one item) the
    clustered sign-flip test of ``values - chance`` instead (Fisher's randomization over clusters,
    :func:`musiceval.stats.exact.sign_flip_test`). (A null whose every permutation scores as the
    answers in place is decided by the gate, exactly.)"""
    chance, observed = float(null.mean()), exact_mean(values)
    ci = mean_interval(values - chance, groups, settings, seed, _shift(scale, -chance))
    if has_clusters(groups):
        p = sign_flip_test(values - chance, groups=groups, n_resamples=settings.n_resamples, seed=seed)
        test = f"permutation null ({null.size} permutations) + clustered sign-flip test + interval ({ci.method})"
    else:
        p = permutation_p_value(observed, null)
        test = f"permutation null ({null.size} permutations) + interval ({ci.method})"
    return Decision(observed - chance, ci, p, test, 0.0, decide(ci, 0.0))


def proportion_above(values: np.ndarray, groups: Sequence[str] | None, p0: float, *, settings: Settings,
                     seed: int, scale: Scale | None = None) -> Decision:
    """A share of 0/1 outcomes above ``p0``: the exact binomial test and Clopper-Pearson interval on
    independent items, on the effective sample size when items share a group (Korn and Graubard;
    :func:`musiceval.stats.intervals.proportion_interval`), or with a bootstrap method a cluster
    bootstrap interval and a clustered sign-flip test."""
    if has_clusters(groups) and not settings.calibrated:
        ci = mean_interval(values - p0, groups, settings, seed, _shift(scale, -p0))
        p = sign_flip_test(values - p0, groups=groups, n_resamples=settings.n_resamples, seed=seed)
        test = f"clustered {ci.method} + sign-flip test"
    else:
        bnd = intervals.proportion_interval(values, groups=groups, alpha=settings.alpha, margin=p0, scale=scale)
        ci, p, test = Interval(bnd.low - p0, bnd.high - p0, bnd.method), bnd.p_value, bnd.method
    k, n = int(values.sum()), int(values.size)
    return Decision(k / n - p0, ci, p, test, 0.0, decide(ci, 0.0))


def paired_proportions(va: np.ndarray, vb: np.ndarray, groups: Sequence[str] | None, *, settings: Settings,
                       seed: int, scale: Scale | None = None) -> tuple[Decision, int, int]:
    """Paired 0/1 outcomes, ``a`` right more often than ``b``: the exact one-sided McNemar p-value
    (unless the calibrated paired interval gives its own) and the paired interval. McNemar counts
    items as independent, so with a bootstrap method and items sharing a group (questions about one
    clip, sampled answers to one item) the p-value is the clustered sign-flip test's, beside the
    cluster bootstrap interval (Obuchowski 1998, in :mod:`musiceval.stats.intervals`). Returns the
    decision and the discordant counts (``a`` only right, ``b`` only right)."""
    p, a_only, b_only = mcnemar_exact(va == 1, vb == 1)
    if settings.calibrated:
        bnd = intervals.paired_interval(va, vb, groups=groups, alpha=settings.alpha, margin=0.0, scale=scale)
        ci = Interval(bnd.low, bnd.high, bnd.method)
        p = bnd.p_value if bnd.p_value is not None else p
        test = f"{bnd.method}; shape={bnd.shape}"
    elif has_clusters(groups):
        ci = mean_interval(va - vb, groups, settings, seed, _diff(scale))
        p = sign_flip_test(va - vb, groups=groups, n_resamples=settings.n_resamples, seed=seed)
        test = f"clustered sign-flip test + paired {ci.method}"
    else:
        ci = mean_interval(va - vb, groups, settings, seed, _diff(scale))
        test = f"exact McNemar + paired {ci.method}"
    return Decision(float((va - vb).mean()), ci, p, test, 0.0, decide(ci, 0.0)), a_only, b_only


def mean_at_least(values: np.ndarray, groups: Sequence[str] | None, threshold: float, *, settings: Settings,
                  seed: int, scale: Scale | None = None) -> Decision:
    """``mean(values) >= threshold``: PASS when the interval's lower bound is at or above it, FAIL
    when its upper bound is below it (the bar is met at equality, unlike :func:`decide`'s)."""
    if settings.calibrated:
        bnd = intervals.one_sample_interval(values, groups=groups, alpha=settings.alpha, margin=threshold, scale=scale)
        ci, test = Interval(bnd.low, bnd.high, f"{bnd.method}; shape={bnd.shape}"), "calibrated interval of the mean"
    else:
        ci, test = mean_interval(values, groups, settings, seed, scale), "bootstrap CI of the mean"
    outcome = Outcome.PASS if ci.low >= threshold else Outcome.FAIL if ci.high < threshold else Outcome.INCONCLUSIVE
    return Decision(exact_mean(values), ci, None, f"{test} ({ci.method})", threshold, outcome)


# ---------------------------------------------------------------------- the gates' tests on ItemScores


def declared(test: Callable[..., GateResult]) -> Callable[..., GateResult]:
    """A gate test on :class:`~musiceval.records.ItemScores` that takes the metric's declared
    ``scale`` (keyword, default None): the scores it was handed are checked against it first
    (:meth:`~musiceval.stats.scales.Scale.check`, an error naming the metric), and the result
    records it (:attr:`~musiceval.records.GateResult.scale`; :func:`~musiceval.stats.scales.describe`
    says when it was read from the values instead)."""
    @functools.wraps(test)
    def run(*args: Any, scale: Scale | None = None, **kwargs: Any) -> GateResult:
        handed = [a for a in args if isinstance(a, ItemScores)]
        if scale is not None:
            for s in handed:
                metric = kwargs.get("metric") or s.metric
                scale.check(s.values, metric=f"{metric} ({s.condition})" if s.condition not in ("", "correct") else metric)
        result = test(*args, scale=scale, **kwargs)
        return replace(result, scale=describe(scale, *(s.values for s in handed if s.n)))
    return run



@declared
def paired_greater(a: ItemScores, b: ItemScores, *, name: str, margin: float = 0.0, protocol: str = "",
                   metric: str = "", settings: Settings, seed: int, scale: Scale | None = None) -> GateResult:
    """``mean(a - b) > margin`` on the items both conditions scored (paired by item id), by
    :func:`paired_difference`. When ``a`` and ``b`` score the same on every item the difference is
    exactly 0 and the gate FAILs without an interval (an answer that equals its control or an
    answer-blind baseline on every item carries no evidence of beating it)."""
    metric = metric or a.metric
    va, vb, groups, unpaired = align_paired(a, b)
    n_failed = len(a.failures) + len(b.failures) + len(unpaired)
    if va.size == 0:
        return _empty(name, "paired bootstrap CI + sign-flip test", margin, protocol, metric, n_failed)
    detail = f"{a.condition}={va.mean():.4f} vs {b.condition}={vb.mean():.4f}"
    if unpaired:
        detail += f"; {len(unpaired)} unpaired items excluded"
    if np.array_equal(va, vb):
        return _identical(name, va.size, a.condition, b.condition, margin=margin, protocol=protocol, metric=metric,
                          n_failed=n_failed, detail=detail)
    decision = paired_difference(va, vb, groups, margin=margin, settings=settings, seed=seed, scale=scale)
    return _decided(decision, name=name, n=int(va.size), threshold=margin, protocol=protocol, metric=metric,
                    n_failed=n_failed, detail=detail, seed=seed)


@declared
def mcnemar_greater(a: ItemScores, b: ItemScores, *, name: str, protocol: str = "", metric: str = "",
                    settings: Settings, seed: int, scale: Scale | None = None) -> GateResult:
    """Paired 0/1 outcomes, ``a`` right more often than ``b`` on the same items, by
    :func:`paired_proportions`; identical outcomes on every item FAIL exactly, as in
    :func:`paired_greater`."""
    metric = metric or a.metric
    if scale is not None and not scale.binary:
        raise ValueError(f"mcnemar_greater needs 0/1 outcomes; {metric!r} is declared {scale.label}: gate it with "
                         "paired_greater")
    va, vb, groups, unpaired = align_paired(a, b)
    n_failed = len(a.failures) + len(b.failures) + len(unpaired)
    if va.size == 0:
        return _empty(name, "exact McNemar", 0.0, protocol, metric, n_failed)
    detail = f"{a.condition}={va.mean():.4f} vs {b.condition}={vb.mean():.4f}"
    if np.array_equal(va, vb):
        return _identical(name, va.size, a.condition, b.condition, margin=0.0, protocol=protocol, metric=metric,
                          n_failed=n_failed, detail=detail)
    decision, a_only, b_only = paired_proportions(va, vb, groups, settings=settings, seed=seed, scale=scale)
    return _decided(decision, name=name, n=int(va.size), threshold=0.0, protocol=protocol, metric=metric,
                    n_failed=n_failed, detail=f"{detail}; discordant {a_only}/{b_only}", seed=seed)


@declared
def greater_than_chance(scores: ItemScores, chance: float, *, name: str, protocol: str = "", metric: str = "",
                        settings: Settings, seed: int, scale: Scale | None = None) -> GateResult:
    """``mean(scores) > chance`` for a known chance level, by :func:`mean_above`; the estimate is
    the mean minus chance."""
    metric = metric or scores.metric
    if scores.n == 0:
        return _empty(name, "bootstrap CI vs fixed chance + sign-flip test", chance, protocol, metric,
                      len(scores.failures))
    decision = mean_above(scores.values, scores.groups, chance, settings=settings, seed=seed, scale=scale)
    return _decided(decision, name=name, n=scores.n, threshold=chance, protocol=protocol, metric=metric,
                    n_failed=len(scores.failures), detail=f"mean={scores.mean():.4f}, chance={chance:.4f}", seed=seed)


@declared
def beats_permutation_null(scores: ItemScores, null_means: Sequence[float] | np.ndarray, *, name: str,
                           protocol: str = "", metric: str = "", settings: Settings, seed: int,
                           scale: Scale | None = None) -> GateResult:
    """``mean(scores)`` above the chance level estimated by permutation, by
    :func:`mean_above_permutation_null`. ``null_means`` are the mean scores under permutations of
    the item-label link (:func:`musiceval.stats.permutation_null`). When every permutation scores as
    the answers in place, the answers do not depend on the item: FAIL, exactly."""
    metric = metric or scores.metric
    null = np.asarray(null_means, dtype=float)
    chance = float(null.mean())
    test = f"permutation null ({null.size} permutations)"
    if scores.n == 0:
        return _empty(name, test, chance, protocol, metric, len(scores.failures))
    if float(np.ptp(null)) == 0.0 and math.isclose(scores.mean(), chance, rel_tol=1e-9, abs_tol=1e-12):
        return GateResult(
            name=name, outcome=Outcome.FAIL, estimate=0.0, ci=(0.0, 0.0), p_value=1.0, n=scores.n,
            threshold=chance, bar=0.0, test=f"{test}: exact, every permutation scores the same",
            protocol=protocol, metric=metric, n_failed=len(scores.failures),
            detail=f"mean={scores.mean():.4f}, and every permutation of the answers across items scores "
                   "the same: the answers do not depend on the item",
        )
    decision = mean_above_permutation_null(scores.values, scores.groups, null, settings=settings, seed=seed,
                                           scale=scale)
    return _decided(decision, name=name, n=scores.n, threshold=chance, protocol=protocol, metric=metric,
                    n_failed=len(scores.failures), seed=seed,
                    detail=f"mean={scores.mean():.4f}, permutation chance={chance:.4f} (sd {null.std():.4f})")


@declared
def binomial_greater(correct: ItemScores, p0: float, *, name: str, protocol: str = "", metric: str = "",
                     settings: Settings, seed: int, scale: Scale | None = None) -> GateResult:
    """Accuracy (0/1 per item) above the chance rate ``p0``, by :func:`proportion_above`."""
    metric = metric or correct.metric
    values = correct.values
    if scale is not None and not scale.binary:
        raise ValueError(f"binomial_greater needs 0/1 outcomes; {metric!r} is declared {scale.label}: gate it with "
                         "greater_than_chance")
    if correct.n and not np.all((values == 0) | (values == 1)):
        raise ValueError(f"binomial_greater needs 0/1 outcomes; {correct.metric!r} has other values")
    if correct.n == 0:
        return _empty(name, "exact binomial", p0, protocol, metric, len(correct.failures))
    k, n = int(values.sum()), correct.n
    decision = proportion_above(values, correct.groups, p0, settings=settings, seed=seed, scale=scale)
    return _decided(decision, name=name, n=n, threshold=p0, protocol=protocol, metric=metric,
                    n_failed=len(correct.failures), detail=f"accuracy={k / n:.4f} ({k}/{n}), chance={p0:.4f}", seed=seed)


@declared
def at_least(scores: ItemScores, threshold: float, *, name: str, protocol: str = "", metric: str = "",
             settings: Settings, seed: int, scale: Scale | None = None) -> GateResult:
    """``mean(scores) >= threshold``, by :func:`mean_at_least`."""
    metric = metric or scores.metric
    if scores.n == 0:
        return _empty(name, "bootstrap CI of the mean", threshold, protocol, metric, len(scores.failures))
    decision = mean_at_least(scores.values, scores.groups, threshold, settings=settings, seed=seed, scale=scale)
    return _decided(decision, name=name, n=scores.n, threshold=threshold, protocol=protocol, metric=metric,
                    n_failed=len(scores.failures), detail="", seed=seed)


@declared
def paired_finding(a: ItemScores, b: ItemScores, *, name: str, detail: str = "", protocol: str = "", metric: str = "",
                   settings: Settings, seed: int, scale: Scale | None = None) -> GateResult:
    """``mean(a - b)`` on the items both scored, with the interval a gate would use
    (:func:`mean_interval`), as a FINDING: a known property the report shows with its uncertainty
    and that never passes or fails a run."""
    va, vb, groups, unpaired = align_paired(a, b)
    diff = va - vb
    ci = mean_interval(diff, groups, settings, seed, _diff(scale)) if diff.size else Interval(math.nan, math.nan, "")
    note = f"n={diff.size} paired items" + (f" ({len(unpaired)} unpaired excluded)" if unpaired else "")
    return GateResult(
        name=name, outcome=Outcome.FINDING, estimate=float(diff.mean()) if diff.size else math.nan,
        ci=(ci.low, ci.high), p_value=None, n=int(diff.size), threshold=math.nan, test=f"finding ({ci.method})",
        protocol=protocol, metric=metric or a.metric, detail=f"{note}; {detail}" if detail else note,
        n_failed=len(a.failures) + len(b.failures) + len(unpaired),
    )


@declared
def interval_finding(scores: ItemScores, *, name: str, minus: float = 0.0, detail: str = "", protocol: str = "",
                     metric: str = "", settings: Settings, seed: int, scale: Scale | None = None) -> GateResult:
    """``mean(scores) - minus`` with the interval a gate would use, as a FINDING: the one-sample
    counterpart of :func:`paired_finding`."""
    diff = scores.values - minus
    ci = mean_interval(diff, scores.groups, settings, seed, _shift(scale, -minus)) if diff.size else Interval(math.nan, math.nan, "")
    return GateResult(
        name=name, outcome=Outcome.FINDING, estimate=float(diff.mean()) if diff.size else math.nan,
        ci=(ci.low, ci.high), p_value=None, n=scores.n, threshold=math.nan, test=f"finding ({ci.method})",
        protocol=protocol, metric=metric or scores.metric, detail=detail, n_failed=len(scores.failures),
    )


def _decided(decision: Decision, *, name: str, n: int, threshold: float, protocol: str, metric: str, n_failed: int,
             detail: str, seed: int) -> GateResult:
    """A :class:`Decision` as the result of the gate ``name``."""
    ci = decision.ci
    return GateResult(
        name=name, outcome=decision.outcome, estimate=decision.estimate, ci=(ci.low, ci.high),
        p_value=decision.p_value, n=n, threshold=threshold, bar=decision.bar, test=decision.test,
        protocol=protocol, metric=metric, n_failed=n_failed, detail=detail, seed=seed,
    )


def _empty(name: str, test: str, threshold: float, protocol: str, metric: str, n_failed: int) -> GateResult:
    """No scored item: nothing to decide."""
    return GateResult(
        name=name, outcome=Outcome.INCONCLUSIVE, estimate=math.nan, ci=(math.nan, math.nan),
        p_value=None, n=0, threshold=threshold, test=test, protocol=protocol, metric=metric,
        n_failed=n_failed, detail="no scored items: nothing to decide", bar=threshold,
    )


def _identical(name: str, n: int, a: str, b: str, *, margin: float, protocol: str, metric: str, n_failed: int,
               detail: str) -> GateResult:
    """Conditions ``a`` and ``b`` score the same on every item: the mean difference is exactly 0 on
    this benchmark, so "a beats b by ``margin`` >= 0" is decided (FAIL) without an interval."""
    return GateResult(
        name=name, outcome=Outcome.FAIL if margin >= 0 else Outcome.PASS, estimate=0.0, ci=(0.0, 0.0),
        p_value=None, n=int(n), threshold=margin, bar=margin,
        test="exact: identical on every item (no interval needed)", protocol=protocol, metric=metric,
        n_failed=n_failed, detail=f"{detail}; {a} and {b} score identically on every one of the {n} items: the "
                                  "difference is exactly 0",
    )
