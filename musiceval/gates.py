"""Release gates: statistical comparisons that end in PASS, FAIL or INCONCLUSIVE.

A :class:`Gate` turns :class:`~musiceval.records.ItemScores` into a
:class:`~musiceval.records.GateResult` with an estimate, a two-sided ``1 - alpha`` interval, a
one-sided p-value and the name of the test used, hands every result (and the per-item scores it
consumed) to a sink, and then calls ``on_result`` so that a test harness can fail or xfail.
It has no pytest dependency: notebooks use it directly with a list as the sink. The statistics
are not here: each gate's test is the pure function of the same name in
:mod:`musiceval.stats.gate_tests`, which pairs the scores, runs the test and returns the finished
result; the gate only records it (:meth:`Gate._conclude`) with the run's nodeid, alpha and seed and
the per-item scores it consumed.

The outcome rule is :func:`musiceval.stats.decide`: PASS when the interval's lower bound clears
the bar (``GateResult.bar``), FAIL when its upper bound is below it, INCONCLUSIVE otherwise, with
``GateResult.n_to_decide``, about how many items would decide it. Two conditions that score the same
on every item are decided exactly (the difference is 0), without an interval. p-values are reported
alongside (and Holm-adjusted across a run by the report), never used to flip an outcome.

Intervals are chosen by the shape of the data (``GateConfig.ci_method="auto"``, the default; see
:mod:`musiceval.stats.intervals` and docs/regression-gates.md): exact / score tests for 0/1 outcomes,
Hall's skew-corrected t for continuous scores, CR1 cluster units when items share a track (paired
items in fewer than 20 tracks: the exact cluster sign-flip test), a finite-sample bound for tiny n,
proportions in [0, 1] with positive width; the shape is
recorded in ``GateResult.test``. Whether the scores are 0/1 outcomes, and the range an interval is
bounded by, is the metric's declaration: every gate takes ``scale=``
(:class:`~musiceval.stats.scales.Scale`, from :attr:`musiceval.protocols.base.MetricInfo.scale`) and
records it in ``GateResult.scale``; without one it is read from the values, and the result says so
(docs/regression-gates.md, "Binary or continuous: the metric declares it"). ``"bca"`` and ``"percentile"`` select bootstrap intervals.

Regression gates against a baseline run: :meth:`Gate.regression` (non-inferiority, with
superiority beside it; :mod:`musiceval.stats.regression`, the engine ``musiceval compare`` uses too),
with the minimum detectable effect as advice in ``GateResult.mde``.

>>> from musiceval.records import ItemScores
>>> rows = []
>>> gate = Gate(GateConfig(n_resamples=2000), sink=rows.append)
>>> a = ItemScores("acc", ids=[str(i) for i in range(200)], values=[1.0] * 150 + [0.0] * 50)
>>> gate.binomial_greater(a, 0.25, name="accuracy beats chance").outcome.value
'PASS'
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from musiceval import stats
from musiceval.records import GateResult, ItemScores, Outcome, to_jsonable
from musiceval.stats import gate_tests
from musiceval.stats.scales import Scale


@dataclass(frozen=True)
class GateConfig:
    alpha: float = 0.05
    n_resamples: int = 10_000
    #: "auto" (the calibrated interval for the data's shape, see :mod:`musiceval.stats.intervals`),
    #: "bca" or "percentile" (bootstrap, as before the calibration work)
    ci_method: str = "auto"
    seed: int = 0
    protocol: str = ""
    #: power at which regression gates compute their minimum detectable effect
    power: float = 0.8

    @property
    def settings(self) -> gate_tests.Settings:
        """What the statistical tests read (:mod:`musiceval.stats.gate_tests`)."""
        return gate_tests.Settings(alpha=self.alpha, n_resamples=self.n_resamples, ci_method=self.ci_method)

    @classmethod
    def from_thresholds(cls, thresholds: Mapping[str, Any], *, seed: int = 0) -> "GateConfig":
        d = thresholds.get("defaults", {})
        return cls(
            alpha=float(d.get("alpha", 0.05)),
            n_resamples=int(d.get("n_resamples", 10_000)),
            ci_method=str(d.get("ci_method", "auto")),
            seed=seed,
            power=float(d.get("power", 0.8)),
        )


def gate_seed(run_seed: int, name: str) -> int:
    """A per-gate seed derived from the run seed and the gate name, so a gate's resamples do
    not depend on which xdist worker ran it or in what order."""
    return (run_seed * 1_000_003 + zlib.crc32(name.encode("utf-8"))) % 2**32


class Gate:
    """Records gate results; see the module docstring."""

    def __init__(
        self,
        config: GateConfig = GateConfig(),
        *,
        sink: Callable[[dict[str, Any]], None] = lambda row: None,
        on_result: Callable[[GateResult], None] = lambda result: None,
        nodeid: str = "",
    ):
        self.config = config
        self.sink = sink
        self.on_result = on_result
        self.nodeid = nodeid
        self.results: list[GateResult] = []

    # ------------------------------------------------------------------ plumbing

    def _conclude(self, result: GateResult, inputs: Sequence[ItemScores] = ()) -> GateResult:
        """Record ``result`` (a statistical test's, :mod:`musiceval.stats.gate_tests`) with this run's
        nodeid, alpha, protocol and seed, and the per-item scores it consumed."""
        result = replace(
            result,
            nodeid=self.nodeid,
            alpha=self.config.alpha,
            protocol=result.protocol or self.config.protocol,
            seed=result.seed if result.seed is not None else self.config.seed,
        )
        if result.outcome is Outcome.INCONCLUSIVE and result.n_to_decide is None and result.bar is not None:
            needed = stats.items_to_decide(result.ci, result.estimate, result.bar, result.n)
            if needed is not None:
                result = replace(result, n_to_decide=needed,
                                 detail=f"{result.detail}; about {needed} items (same design) would decide it".lstrip("; "))
        for scores in inputs:
            self.record_scores(scores, gate=result.name, protocol=result.protocol)
        self.results.append(result)
        self.sink({"type": "gate", **to_jsonable(result)})
        self.on_result(result)
        return result

    def _seed(self, name: str) -> int:
        return gate_seed(self.config.seed, name)

    # ------------------------------------------------------------------ gates

    def paired_greater(
        self, a: ItemScores, b: ItemScores, *, name: str, margin: float = 0.0, protocol: str = "", metric: str = "",
        scale: Scale | None = None
    ) -> GateResult:
        """``mean(a - b) > margin`` on the items both conditions scored (paired by item id):
        :func:`musiceval.stats.gate_tests.paired_greater`.

        Interval: the calibrated paired interval (:func:`musiceval.stats.intervals.paired_interval`;
        with fewer than 20 clusters the exact cluster sign-flip test and its interval) or
        the paired bootstrap (``ci_method`` "bca"/"percentile"; whole clusters resampled when
        items share a group). When ``a`` and ``b`` score the same on every item the difference is
        exactly 0 and the gate FAILs without an interval (an answer that equals its control or
        an answer-blind baseline on every item carries no evidence of beating it).
        """
        result = gate_tests.paired_greater(a, b, name=name, margin=margin, protocol=protocol, metric=metric,
                                           settings=self.config.settings, seed=self._seed(name), scale=scale)
        return self._conclude(result, (a, b))

    def greater_than_chance(
        self, scores: ItemScores, chance: float, *, name: str, protocol: str = "", metric: str = "",
        scale: Scale | None = None
    ) -> GateResult:
        """``mean(scores) > chance`` for a known chance level: the calibrated one-sample interval
        (:func:`musiceval.stats.intervals.one_sample_interval`), or a bootstrap interval of the mean and a
        sign-flip test of ``scores - chance``. The estimate is the mean minus chance
        (:func:`musiceval.stats.gate_tests.greater_than_chance`)."""
        result = gate_tests.greater_than_chance(scores, chance, name=name, protocol=protocol, metric=metric,
                                                settings=self.config.settings, seed=self._seed(name), scale=scale)
        return self._conclude(result, (scores,))

    def beats_permutation_null(
        self, scores: ItemScores, null_means: Sequence[float] | np.ndarray, *, name: str, protocol: str = "", metric: str = "",
        scale: Scale | None = None
    ) -> GateResult:
        """``mean(scores)`` above the chance level estimated by permutation
        (:func:`musiceval.stats.gate_tests.beats_permutation_null`).

        ``null_means`` are the mean scores under permutations of the item-label link (see
        :func:`musiceval.stats.permutation_null`). Estimate: observed mean minus the null mean;
        interval: the interval of the observed mean minus the null mean; p-value: Monte Carlo
        permutation p-value.
        """
        result = gate_tests.beats_permutation_null(scores, null_means, name=name, protocol=protocol, metric=metric,
                                                   settings=self.config.settings, seed=self._seed(name), scale=scale)
        return self._conclude(result, (scores,))

    def binomial_greater(
        self, correct: ItemScores, p0: float, *, name: str, protocol: str = "", metric: str = "",
        scale: Scale | None = None
    ) -> GateResult:
        """Accuracy (0/1 per item) above the chance rate ``p0``
        (:func:`musiceval.stats.gate_tests.binomial_greater`).

        Independent items: exact binomial test and Clopper-Pearson interval. Items sharing a
        group (several questions per track): the same on the effective sample size (Korn and
        Graubard; :func:`musiceval.stats.intervals.proportion_interval`), or with ``ci_method``
        "bca"/"percentile" a cluster bootstrap interval and a clustered sign-flip test, because
        the plain binomial would overstate the evidence.
        """
        result = gate_tests.binomial_greater(correct, p0, name=name, protocol=protocol, metric=metric,
                                             settings=self.config.settings, seed=self._seed(name), scale=scale)
        return self._conclude(result, (correct,))

    def mcnemar_greater(
        self, a: ItemScores, b: ItemScores, *, name: str, protocol: str = "", metric: str = "",
        scale: Scale | None = None
    ) -> GateResult:
        """Paired 0/1 outcomes: condition ``a`` right more often than ``b`` on the same items
        (:func:`musiceval.stats.gate_tests.mcnemar_greater`).

        Exact one-sided McNemar p-value; interval from :func:`musiceval.stats.intervals.paired_interval`
        (or the paired bootstrap). Identical outcomes on every item FAIL exactly, as in
        :meth:`paired_greater`.
        """
        result = gate_tests.mcnemar_greater(a, b, name=name, protocol=protocol, metric=metric,
                                            settings=self.config.settings, seed=self._seed(name), scale=scale)
        return self._conclude(result, (a, b))

    def regression(
        self, new: ItemScores, old: ItemScores, *, margin: float, name: str, higher_is_better: bool = True,
        new_label: str = "new", old_label: str = "old", protocol: str = "", metric: str = "", baseline: str = "",
        scale: Scale | None = None,
    ):
        """Regression gate: ``new`` is not worse than ``old`` by more than ``margin`` (metric units),
        with superiority reported beside it; returns the
        :class:`~musiceval.stats.regression.Comparison` of :func:`musiceval.stats.regression.compare_scores` (the
        engine ``musiceval compare`` uses too) and records its non-inferiority result as the gate."""
        from musiceval.stats.regression import compare_scores

        comparison = compare_scores(
            new, old, margin=margin, name=name, higher_is_better=higher_is_better, new_label=new_label,
            old_label=old_label, protocol=protocol, metric=metric, alpha=self.config.alpha, power=self.config.power,
            baseline=baseline, scale=scale,
        )
        return replace(comparison, non_inferior=self._conclude(comparison.non_inferior, (new, old)))

    def non_inferior(
        self, new: ItemScores, old: ItemScores, *, margin: float, name: str, higher_is_better: bool = True,
        new_label: str = "new", old_label: str = "old", protocol: str = "", metric: str = "", baseline: str = "",
        scale: Scale | None = None,
    ) -> GateResult:
        """``new`` is not worse than ``old`` by more than ``margin``: the non-inferiority claim of
        :meth:`regression` (see :mod:`musiceval.stats.regression`), as the gate's result."""
        return self.regression(new, old, margin=margin, name=name, higher_is_better=higher_is_better,
                               new_label=new_label, old_label=old_label, protocol=protocol, metric=metric,
                               baseline=baseline, scale=scale).non_inferior

    def superior(
        self, new: ItemScores, old: ItemScores, *, margin: float = 0.0, name: str, higher_is_better: bool = True,
        new_label: str = "new", old_label: str = "old", protocol: str = "", metric: str = "", baseline: str = "",
        scale: Scale | None = None,
    ) -> GateResult:
        """Improvement claim: ``new`` beats ``old`` by more than ``margin`` (lower bound above
        ``+margin``); same pairing and interval as :meth:`regression`."""
        from musiceval.stats.regression import regression_result

        result = regression_result(
            "superior", new, old, margin=margin, name=name, higher_is_better=higher_is_better,
            new_label=new_label, old_label=old_label, protocol=protocol, metric=metric,
            alpha=self.config.alpha, power=self.config.power, baseline=baseline, scale=scale,
        )
        return self._conclude(result, (new, old))

    def at_least(
        self, scores: ItemScores, threshold: float, *, name: str, protocol: str = "", metric: str = "",
        scale: Scale | None = None
    ) -> GateResult:
        """``mean(scores) >= threshold``: PASS when the interval's lower bound is at or above it
        (:func:`musiceval.stats.gate_tests.at_least`)."""
        result = gate_tests.at_least(scores, threshold, name=name, protocol=protocol, metric=metric,
                                     settings=self.config.settings, seed=self._seed(name), scale=scale)
        return self._conclude(result, (scores,))

    def finding(
        self,
        name: str,
        *,
        estimate: float,
        ci: tuple[float, float] = (math.nan, math.nan),
        detail: str = "",
        protocol: str = "",
        metric: str = "",
        n: int = 0,
        scale: Scale | None = None,
    ) -> GateResult:
        """Record a finding (a known property of a metric or model), shown in the report; never fails.
        ``scale``: the declared scale its ``ci`` was computed on (:meth:`interval`), recorded with it."""
        return self._conclude(
            GateResult(
                name=name, outcome=Outcome.FINDING, estimate=float(estimate), ci=tuple(map(float, ci)),  # type: ignore[arg-type]
                p_value=None, n=n, threshold=math.nan, test="finding", protocol=protocol, metric=metric, detail=detail,
                scale=scale.label if scale is not None else "",
            )
        )

    def paired_finding(
        self, a: ItemScores, b: ItemScores, *, name: str, detail: str = "", protocol: str = "", metric: str = "",
        scale: Scale | None = None
    ) -> GateResult:
        """Record ``mean(a - b)`` on the items both scored, with the interval a gate would use,
        as a FINDING: for known properties ("n-gram metrics score Adversarial >= Skyline") that
        the report should show with their uncertainty but that must never pass or fail a run
        (:func:`musiceval.stats.gate_tests.paired_finding`)."""
        result = gate_tests.paired_finding(a, b, name=name, detail=detail, protocol=protocol, metric=metric,
                                           settings=self.config.settings, seed=self._seed(name), scale=scale)
        return self._conclude(result, (a, b))

    def interval_finding(
        self, scores: ItemScores, *, name: str, minus: float = 0.0, detail: str = "", protocol: str = "", metric: str = "",
        scale: Scale | None = None
    ) -> GateResult:
        """Record ``mean(scores) - minus`` with the interval a gate would use, as a FINDING: the
        one-sample counterpart of :meth:`paired_finding` (a weak model against chance, a metric
        that is reported but not gated; :func:`musiceval.stats.gate_tests.interval_finding`)."""
        result = gate_tests.interval_finding(scores, name=name, minus=minus, detail=detail, protocol=protocol,
                                             metric=metric, settings=self.config.settings, seed=self._seed(name), scale=scale)
        return self._conclude(result, (scores,))

    def interval(self, values: Sequence[float] | np.ndarray, groups: Sequence[str] | None = None, *, name: str,
                 scale: Scale | None = None) -> stats.Interval:
        """The interval every gate reports (the run's alpha, resamples and method; whole clusters
        resampled when items share a group; the values' declared ``scale``), seeded from the run seed
        and ``name``."""
        return gate_tests.mean_interval(np.asarray(values, dtype=float), groups, self.config.settings, self._seed(name),
                                        scale)

    # ------------------------------------------------------------------ extra report content

    def record_scores(self, *item_scores: ItemScores, gate: str = "", protocol: str = "") -> None:
        for s in item_scores:
            self.sink({
                "type": "scores", "gate": gate, "protocol": protocol or self.config.protocol, "metric": s.metric,
                "condition": s.condition, "ids": list(s.ids), "values": to_jsonable(s.values),
                "groups": list(s.groups) if s.groups is not None else None,
                "failures": [to_jsonable(f) for f in s.failures], "nodeid": self.nodeid,
            })

    def record_table(self, protocol: str, name: str, rows: list[dict[str, Any]]) -> None:
        self.sink({"type": "table", "protocol": protocol, "name": name, "rows": to_jsonable(rows), "nodeid": self.nodeid})

    def record_bars(self, protocol: str, name: str, values: Mapping[str, float], ylabel: str = "") -> None:
        self.sink({"type": "bars", "protocol": protocol, "name": name, "values": to_jsonable(dict(values)),
                   "ylabel": ylabel, "nodeid": self.nodeid})
