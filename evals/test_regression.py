"""Regression gates against the last release: ``[baseline] results = <results dir of its run>`` in the
config, or ``[baseline] name = "v1"`` with ``[[baseline.answers]]`` (its answer files, scored here
with the same settings).

For every answer source of the model under test and every metric the baseline run holds per-item
scores for (joined by item id on the same source label), the new model must be non-inferior:
the paired difference, clustered by track, has its lower bound above ``-regression_margin`` (in
the metric's own units; lower-is-better metrics such as WER are compared the other way round).
Each gate states its minimum detectable effect; a margin below it is INCONCLUSIVE, never a PASS.
Items present in one run only are counted and named. The regression gates of a run are adjusted
together (``[defaults] adjust``: Holm, or Benjamini-Hochberg), as the report states.

Two runs are compared only when their scorer side agrees (musiceval and parser/matcher/prompt
versions, the seed, and per source the items the answers are scored against); otherwise the gate
FAILs listing the differences: model drift is what is measured, scorer drift is refused.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from musiceval.suite import checks
from musiceval.suite.schema import margin_for

PROTOCOLS = ("choice", "factual", "freeform", "mir")


class AnswerBaseline:
    """The previous release's answer files, scored by this run's protocols (same scorer side)."""

    def __init__(self, suite, runs):
        self.label = self.path = suite.baseline["model"].name
        self._sources = {(s.protocol, s.label): s for s in suite.baseline_sources()}
        self._runs = runs
        self.sources: dict = {}

    def check(self, fingerprint, label: str = "") -> list[str]:
        return []  # scored in this run: the scorer side is this run's by construction

    def scores(self, key: str, metric: str, condition: str = "correct"):
        protocol, _, label = key.partition("/")
        source = self._sources.get((protocol, label))
        if source is None:
            return None
        run = self._runs(source)
        return run.scores(metric, condition) if metric in run.metrics and condition in run.conditions else None


@pytest.fixture(scope="session")
def baseline(musiceval_suite, musiceval_runs):
    if musiceval_suite.baseline.get("model") is not None:
        return AnswerBaseline(musiceval_suite, musiceval_runs)
    path = musiceval_suite.baseline.get("results")
    if not path:
        return None
    from musiceval.compare import Baseline

    base = Baseline(path)
    base.sources = {r["id"].split("/", 1)[1]: r for r in json.loads((Path(path) / "results.json").read_text(
        encoding="utf-8")).get("sources", []) if isinstance(r, dict) and "/" in str(r.get("id", ""))}
    return base


def test_not_worse_than_the_baseline(run, gate, baseline, thresholds, pytestconfig):
    from musiceval.compare import NotComparable

    if baseline is None:
        gate.skip("no baseline release declared: add [baseline] results = \"<results dir of the previous run>\" "
                  "(or its answer files) to the suite config", applicable=False)
    try:
        baseline.check(pytestconfig._musiceval["meta"]["provenance"], label=run.model)
        refused = ""
    except NotComparable as exc:
        refused = str(exc)
    if refused:
        pytest.fail(f"{run.model} {run.source}: not comparable with the baseline: {refused}", pytrace=False)
    old_source = baseline.sources.get(f"{run.name}/{run.source}")
    if old_source and old_source.get("items_sha256") != run.items_sha256:
        pytest.fail(f"{run.model} {run.source}: the baseline scored different items or references for this source "
                    f"(items sha256 {str(old_source.get('items_sha256'))[:12]} vs {run.items_sha256[:12]}): scorer "
                    "drift, not model drift; rerun the baseline on these items", pytrace=False)
    key, compared = f"{run.name}/{run.source}", 0
    for metric in run.metrics:
        old = baseline.scores(key, metric, "correct")
        if old is None:
            continue
        old = replace(old, condition=f"baseline {baseline.label}")  # its rows stay apart from this run's own
        info = run.metric_info(metric)
        g = checks.bind(gate, run, "regression", metric, default_role="gate")
        margin = g.margin(margin_for(thresholds[run.name], metric, getattr(run, "task", ""), kind="regression_margin"))
        g.non_inferior(run.scores(metric, "correct"), old, margin=margin, higher_is_better=info.higher_is_better,
                       name=f"{run.model} {run.source} {metric} not worse than {baseline.label} by {margin:g}",
                       new_label=run.model, old_label=baseline.label, protocol=run.name, metric=metric,
                       baseline=baseline.label)
        compared += 1
    if not compared:
        gate.skip(f"the baseline run {baseline.label} holds no per-item scores for {key}", applicable=False)
