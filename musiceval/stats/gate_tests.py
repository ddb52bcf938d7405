"""The statistical test behind each gate of :class:`musiceval.gates.Gate`, as pure functions on
per-item arrays: each returns a :class:`Decision` (estimate, interval, p-value, the test's name and
the outcome by :func:`~musiceval.stats.core.decide`), and the gate records it with its name,
inputs and detail.

Every function takes the run's :class:`Settings` (alpha, resamples, interval method) and the
gate's own seed. With ``ci_method="auto"`` (the default) the interval is the calibrated one for
the data's shape (:mod:`musiceval.stats.intervals`); ``"bca"`` and ``"percentile"`` select the
bootstrap, whole clusters resampled when items share a group, with a sign-flip test for the
p-value (docs/regression-gates.md, "Intervals: which one each gate uses and why").
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from musiceval.records import Outcome
from musiceval.stats import intervals
from musiceval.stats.intervals import has_clusters
from musiceval.stats.bootstrap import paired_bootstrap_ci
from musiceval.stats.core import Interval, decide
from musiceval.stats.exact import mcnemar_exact, sign_flip_test
from musiceval.stats.permutation import permutation_p_value


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


def exact_mean(values: np.ndarray) -> float:
    """The mean by ``math.fsum``: the same for any order of the items (``ItemScores.mean``)."""
    return math.fsum(values.tolist()) / values.size


def mean_interval(values: np.ndarray, groups: Sequence[str] | None, settings: Settings, seed: int) -> Interval:
    """The interval of ``mean(values)`` every gate reports: calibrated for the data's shape, or the
    bootstrap (clustered when items share a group)."""
    if settings.calibrated:
        bnd = intervals.one_sample_interval(values, groups=groups, alpha=settings.alpha)
        return Interval(bnd.low, bnd.high, f"{bnd.method}; shape={bnd.shape}")
    return paired_bootstrap_ci(values, groups=groups if has_clusters(groups) else None, alpha=settings.alpha,
                               n_resamples=settings.n_resamples, seed=seed, method=settings.ci_method)


def paired_difference(va: np.ndarray, vb: np.ndarray, groups: Sequence[str] | None, *, margin: float,
                      settings: Settings, seed: int) -> Decision:
    """``mean(a - b) > margin`` on paired items: the calibrated paired interval
    (:func:`musiceval.stats.intervals.paired_interval`; fewer than 20 clusters: the exact cluster
    sign-flip test), or the paired bootstrap and a sign-flip test."""
    diff = va - vb
    if settings.calibrated:
        bnd = intervals.paired_interval(va, vb, groups=groups, alpha=settings.alpha, margin=margin)
        ci, p, test = Interval(bnd.low, bnd.high, f"{bnd.method}; shape={bnd.shape}"), bnd.p_value, "paired calibrated interval"
    else:
        ci = mean_interval(diff, groups, settings, seed)
        p = sign_flip_test(diff - margin, groups=groups if has_clusters(groups) else None,
                           n_resamples=settings.n_resamples, seed=seed)
        test = "paired bootstrap CI + sign-flip test"
    return Decision(float(diff.mean()), ci, p, f"{test} ({ci.method})", margin, decide(ci, margin))


def mean_above(values: np.ndarray, groups: Sequence[str] | None, level: float, *, settings: Settings,
               seed: int) -> Decision:
    """``mean(values) > level`` for a known level (chance): the calibrated one-sample interval, or
    a bootstrap interval of the mean and a sign-flip test of ``values - level``. The estimate is
    the mean minus the level."""
    diff = values - level
    if settings.calibrated:
        bnd = intervals.one_sample_interval(values, groups=groups, alpha=settings.alpha, margin=level)
        ci, p = Interval(bnd.low - level, bnd.high - level, f"{bnd.method}; shape={bnd.shape}"), bnd.p_value
        test = "calibrated interval vs fixed chance"
    else:
        ci = mean_interval(diff, groups, settings, seed)
        p = sign_flip_test(diff, groups=groups if has_clusters(groups) else None, n_resamples=settings.n_resamples,
                           seed=seed)
        test = "bootstrap CI vs fixed chance + sign-flip test"
    return Decision(float(diff.mean()), ci, p, f"{test} ({ci.method})", 0.0, decide(ci, 0.0))


def mean_above_permutation_null(values: np.ndarray, groups: Sequence[str] | None, null: np.ndarray, *,
                                settings: Settings, seed: int) -> Decision:
    """``mean(values)`` above the chance level estimated by permutation (``null``: the mean score
    of each permutation of the item-label link). Estimate and interval: of the mean minus the
    null's mean; p-value: the Monte Carlo permutation p-value, which takes items as exchangeable;
    with items sharing a group (questions about one clip, sampled answers to one item) the
    clustered sign-flip test of ``values - chance`` instead (Fisher's randomization over clusters,
    :func:`musiceval.stats.exact.sign_flip_test`). (A null whose every permutation scores as the
    answers in place is decided by the gate, exactly.)"""
    chance, observed = float(null.mean()), exact_mean(values)
    ci = mean_interval(values - chance, groups, settings, seed)
    if has_clusters(groups):
        p = sign_flip_test(values - chance, groups=groups, n_resamples=settings.n_resamples, seed=seed)
        test = f"permutation null ({null.size} permutations) + clustered sign-flip test + interval ({ci.method})"
    else:
        p = permutation_p_value(observed, null)
        test = f"permutation null ({null.size} permutations) + interval ({ci.method})"
    return Decision(observed - chance, ci, p, test, 0.0, decide(ci, 0.0))


def proportion_above(values: np.ndarray, groups: Sequence[str] | None, p0: float, *, settings: Settings,
                     seed: int) -> Decision:
    """A share of 0/1 outcomes above ``p0``: the exact binomial test and Clopper-Pearson interval on
    independent items, on the effective sample size when items share a group (Korn and Graubard;
    :func:`musiceval.stats.intervals.proportion_interval`), or with a bootstrap method a cluster
    bootstrap interval and a clustered sign-flip test."""
    if has_clusters(groups) and not settings.calibrated:
        ci = mean_interval(values - p0, groups, settings, seed)
        p = sign_flip_test(values - p0, groups=groups, n_resamples=settings.n_resamples, seed=seed)
        test = f"clustered {ci.method} + sign-flip test"
    else:
        bnd = intervals.proportion_interval(values, groups=groups, alpha=settings.alpha, margin=p0)
        ci, p, test = Interval(bnd.low - p0, bnd.high - p0, bnd.method), bnd.p_value, bnd.method
    k, n = int(values.sum()), int(values.size)
    return Decision(k / n - p0, ci, p, test, 0.0, decide(ci, 0.0))


def paired_proportions(va: np.ndarray, vb: np.ndarray, groups: Sequence[str] | None, *, settings: Settings,
                       seed: int) -> tuple[Decision, int, int]:
    """Paired 0/1 outcomes, ``a`` right more often than ``b``: the exact one-sided McNemar p-value
    (unless the calibrated paired interval gives its own) and the paired interval. McNemar counts
    items as independent, so with a bootstrap method and items sharing a group (questions about one
    clip, sampled answers to one item) the p-value is the clustered sign-flip test's, beside the
    cluster bootstrap interval (Obuchowski 1998, in :mod:`musiceval.stats.intervals`). Returns the
    decision and the discordant counts (``a`` only right, ``b`` only right)."""
    p, a_only, b_only = mcnemar_exact(va == 1, vb == 1)
    if settings.calibrated:
        bnd = intervals.paired_interval(va, vb, groups=groups, alpha=settings.alpha, margin=0.0)
        ci = Interval(bnd.low, bnd.high, bnd.method)
        p = bnd.p_value if bnd.p_value is not None else p
        test = f"{bnd.method}; shape={bnd.shape}"
    elif has_clusters(groups):
        ci = mean_interval(va - vb, groups, settings, seed)
        p = sign_flip_test(va - vb, groups=groups, n_resamples=settings.n_resamples, seed=seed)
        test = f"clustered sign-flip test + paired {ci.method}"
    else:
        ci = mean_interval(va - vb, groups, settings, seed)
        test = f"exact McNemar + paired {ci.method}"
    return Decision(float((va - vb).mean()), ci, p, test, 0.0, decide(ci, 0.0)), a_only, b_only


def mean_at_least(values: np.ndarray, groups: Sequence[str] | None, threshold: float, *, settings: Settings,
                  seed: int) -> Decision:
    """``mean(values) >= threshold``: PASS when the interval's lower bound is at or above it, FAIL
    when its upper bound is below it (the bar is met at equality, unlike :func:`decide`'s)."""
    if settings.calibrated:
        bnd = intervals.one_sample_interval(values, groups=groups, alpha=settings.alpha, margin=threshold)
        ci, test = Interval(bnd.low, bnd.high, f"{bnd.method}; shape={bnd.shape}"), "calibrated interval of the mean"
    else:
        ci, test = mean_interval(values, groups, settings, seed), "bootstrap CI of the mean"
    outcome = Outcome.PASS if ci.low >= threshold else Outcome.FAIL if ci.high < threshold else Outcome.INCONCLUSIVE
    return Decision(exact_mean(values), ci, None, f"{test} ({ci.method})", threshold, outcome)
