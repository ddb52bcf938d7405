"""The gates every protocol applies to the declared model, for each of its answer sources.

Each test runs once per answer set the suite config declares (``musiceval.toml``: a MuChoMusic
file, a factual answer file, a MusicQA file, one CMI-Bench task file ...), on the
:class:`~musiceval.protocols.base.Protocol` built from it (the ``run`` fixture):

- **beats chance**: every metric with a chance level beats each of them, the strongest
  answer-blind strategies: an exact binomial test against a uniform guess (1/4 for four options,
  1/10 for GTZAN's genres), the best constant answer and the answer permutation of multiple choice,
  the permutation null and the best constant label set of factual F1, and each MIR task's trivial
  baseline (majority class, mean predictor, metronome, empty transcript), paired by item;
- **the model listens**: the headline metric under Correct beats the best control condition the
  answers hold (random audio, white noise, text only, silence), or, with none, the same answers
  moved to other items (the answer permutation), paired by item and clustered by track; its
  estimate is the audio-dependence score. Answers that do not depend on the audio FAIL;
- **parse rate**: the share of answers the protocol's parser could read (MuChoMusic's
  instruction-following rate, generalised) is at least ``[<protocol>] min_parse_rate``;
- **every line accounted for**: every line of the answer file was read (at most ``[defaults]
  max_unreadable`` torn or mistyped lines, named ``file:line``), and the answers cover at least
  ``[defaults] min_coverage`` of the benchmark's items (``covers X of N items``; a census).

Whether a check is a release gate or a finding, and its margin in the metric's own units, come
from the metric's default role and the suite config's ``[checks]`` rules.
"""
from __future__ import annotations

from musiceval.protocols.base import PARSE_RATE
from musiceval.suite import checks
from musiceval.keys import margin_for

#: the tests and fixtures this module contributes (``musiceval.evals.release_gates`` gathers them)
__all__ = ["test_beats_chance", "test_listens", "test_parse_rate", "test_every_line_is_accounted_for"]
#: every registered protocol that reads answer files, a plugin's included
PROTOCOLS = "*"


def test_beats_chance(run, gate, thresholds):
    section = thresholds[run.name]
    gate.record_table(run.name, f"{run.model} {run.source}: evaluate()", [
        {k: v for k, v in run.evaluate().items() if k not in ("failures", "notes")}])
    compared = 0
    for metric in run.metrics:
        if metric == PARSE_RATE:
            continue
        for chance in run.chances(metric):
            checks.beats_chance(gate, run, metric, chance, margin=margin_for(section, metric, getattr(run, "task", "")))
            compared += 1
    if not compared:
        gate.skip(f"{run.model} {run.source}: {run.name} has no chance level for its metrics", applicable=False)


def test_listens(run, gate, thresholds):
    section = thresholds[run.name]
    if not run.controls() and run.answer_permutation(run.headline) is None:
        gate.skip(f"{run.model} {run.source}: the answers hold no control condition (random audio, noise, text "
                  "only, silence) and too few items on other tracks to move them to; record answers under a "
                  "control (musiceval generate --conditions correct,noise,text_only) to gate whether the model "
                  "listens", applicable=False)
    gate.record_table(run.name, f"{run.model} {run.source}: {run.headline} by condition",
                      [{"condition": c, run.headline: v} for c, v in checks.control_means(run, run.headline).items()])
    checks.listens(gate, run, margin=float(section["listens_margin"]))


def test_parse_rate(run, gate, thresholds):
    checks.parse_rate(gate, run, float(thresholds[run.name]["min_parse_rate"]))


def test_every_line_is_accounted_for(run, gate, thresholds):
    defaults = thresholds["defaults"]
    checks.readable(gate, run, int(defaults["max_unreadable"]))
    if checks.coverage(gate, run, float(defaults["min_coverage"])) is None:
        gate.record_table(run.name, f"{run.model} {run.source}: coverage", [{
            "answered": run.accounting.answered, "benchmark": "unknown",
            "note": "set expected_items in the answers entry to gate coverage"}])
