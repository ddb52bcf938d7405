"""Regression gates against the last release: ``[baseline] results = <results dir of its run>`` in the
config, or ``[baseline] name = "v1"`` with ``[[baseline.answers]]`` (its answer files, scored here
with the same settings).

For every answer source of the model under test and every metric the baseline holds per-item
scores for (paired by item id; sources pair by protocol and label, else by identical items), the
new model must be non-inferior: the paired difference, clustered by track, has its lower bound
above ``-regression_margin`` (in the metric's own units; lower-is-better metrics such as WER are
compared the other way round). The interval decides: PASS when its lower bound clears the bar,
FAIL when its upper bound is below it, INCONCLUSIVE otherwise with the number of items that would
decide it; the minimum detectable effect is advice only. Superiority is reported beside each gate.
Items present in one run only are counted and named. The regression gates of a run are adjusted
together (``[defaults] adjust``: Holm, or Benjamini-Hochberg), as the report states. Each gate is
:meth:`musiceval.gates.Gate.regression`, the engine ``musiceval compare`` uses too.

Two runs are compared only when their scorer side agrees (musiceval and parser/matcher/prompt
versions, the seed, and per source the items the answers are scored against); otherwise the test
errors listing the differences (verdict ERROR): model drift is what is measured, scorer drift is refused.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from musiceval.protocols import checks
from musiceval.suite.baselines import BaselineSourceError, load_baseline
from musiceval.keys import margin_for

#: the tests and fixtures this module contributes (``musiceval.evals.release_gates`` gathers them)
__all__ = ["baseline", "test_not_worse_than_the_baseline"]
#: every registered protocol that reads answer files, a plugin's included
PROTOCOLS = "*"


@pytest.fixture(scope="session")
def baseline(musiceval_suite, musiceval_runs):
    return load_baseline(musiceval_suite, musiceval_runs)


def test_not_worse_than_the_baseline(run, gate, baseline, thresholds, musiceval_refuse):
    from musiceval.results.comparison import NotComparable

    if baseline is None:
        gate.skip("no baseline release declared: add [baseline] results = \"<results dir of the previous run>\" "
                  "(or its answer files) to the suite config", applicable=False)
    try:
        baseline.check(gate.provenance, label=run.model)
    except NotComparable as exc:
        musiceval_refuse(f"{run.model} {run.source}: not comparable with the baseline: {exc}")
    label, paired_note = baseline.source_for(run.name, run.source, run.items_sha256)
    if label is None:
        gate.skip(f"not in the baseline: {baseline.label} has no {run.name} source {run.source!r} (by label or by "
                  "identical items)", applicable=False)
    old_source = getattr(baseline, "_run", None) and baseline._run.sources.get(f"{run.name}/{label}")
    if old_source and old_source != run.items_sha256:
        musiceval_refuse(f"{run.model} {run.source}: the baseline scored different items or references for this "
                         f"source (items sha256 {old_source[:12]} vs {run.items_sha256[:12]}): scorer drift, not "
                         "model drift; rerun the baseline on these items")
    compared = 0
    for metric in run.metrics:
        try:
            old = baseline.scores(run.name, run.source, metric, "correct", items_sha256=run.items_sha256)
        except BaselineSourceError as exc:
            musiceval_refuse(str(exc))
        if old is None:
            continue
        old = replace(old, condition=f"baseline {baseline.label}")  # its rows stay apart from this run's own
        info = run.metric_info(metric)
        g = checks.bind(gate, run, "regression", metric, default_role="gate")
        margin = g.margin(margin_for(thresholds[run.name], metric, getattr(run, "task", ""), kind="regression_margin"))
        g.regression(run.scores(metric, "correct"), old, margin=margin, higher_is_better=info.higher_is_better,
                     name=f"{run.model} {run.source} {metric} not worse than {baseline.label} by {margin:g}"
                          + (f" ({paired_note})" if paired_note else ""),
                     new_label=run.model, old_label=baseline.label, protocol=run.name, metric=metric,
                     baseline=baseline.label, scale=info.scale)
        compared += 1
    if not compared:
        gate.skip(f"the baseline {baseline.label} holds no per-item scores for {run.name}/{run.source}", applicable=False)
