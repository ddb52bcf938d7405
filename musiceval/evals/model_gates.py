"""The gates every protocol applies to the declared model, for each of its answer sources.

Each test runs once per answer set the suite config declares (``musiceval.toml``: a MuChoMusic
file, a factual answer file, a MusicQA file, one CMI-Bench task file ...), on the
:class:`~musiceval.protocols.base.Protocol` built from it (the ``run`` fixture):

- **beats chance**: ONE gate per metric with a chance level, "beats the strongest answer-blind
  strategy": the metric beats every one of them (an exact binomial test against a uniform guess,
  1/4 for four options, 1/10 for GTZAN's genres; the best constant answer and the answer
  permutation of multiple choice; the permutation null and the best constant label set of factual
  F1; each MIR task's trivial baseline, majority class, mean predictor, metronome, empty
  transcript; tagging's tag-frequency ranking, most common response and answer permutation; paired
  by item), combined by the intersection-union test: PASS only when every comparison PASSes
  (Berger 1982), named after the least favourable one, every strategy listed in its detail;
- **the model listens**: the headline metric under Correct beats the best control condition the
  answers hold (random audio, white noise, text only, silence), or, with none, the same answers
  moved to other items (the answer permutation), paired by item and clustered by track; its
  estimate is the audio-dependence score. Answers that do not depend on the audio FAIL;
- **the model answers the question**: wherever the benchmark asks several questions about one
  clip (MusicQA, MuChoMusic, MMAU), the headline metric under Correct beats the same answers moved
  to other questions about the same clip (the question control), paired by item and clustered by
  clip; answers that fit every question about their clip equally well do not pass;
- **parse rate**: the share of answers the protocol's parser could read (MuChoMusic's
  instruction-following rate, generalised) is at least ``[<protocol>] min_parse_rate``;
- **every line accounted for**: every line of the answer file was read (at most ``[defaults]
  max_unreadable`` torn or mistyped lines, named ``file:line``), and the answers cover at least
  ``[defaults] min_coverage`` of the benchmark's items (``covers X of N items``; a census); with
  K sampled answers per item, a finding of how they agree (:mod:`musiceval.suite.repeats`).

Whether a check is a release gate or a finding, and its margin in the metric's own units, come
from the metric's default role and the suite config's ``[checks]`` rules.
"""
from __future__ import annotations

from musiceval.protocols.base import PARSE_RATE
from musiceval.protocols import checks
from musiceval.suite.repeats import record_agreement
from musiceval.keys import margin_for

#: the tests and fixtures this module contributes (``musiceval.evals.release_gates`` gathers them)
__all__ = ["test_beats_chance", "test_listens", "test_answers_the_question", "test_parse_rate",
           "test_every_line_is_accounted_for"]
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
        if checks.beats_chance(gate, run, metric, margin=margin_for(section, metric, getattr(run, "task", ""))):
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


def test_answers_the_question(run, gate, thresholds):
    metric = run.headline
    if run.question_permutation(metric) is None:
        gate.skip(f"{run.model} {run.source}: {_question_control_absent(run)}", applicable=False)
    partners = run.question_partners()
    gate.record_table(run.name, f"{run.model} {run.source}: {metric}, answers in place and moved to other questions "
                      "about the same clip", [
                          {"answers": "in place (Correct)", metric: run.scores(metric, "correct").mean()},
                          {"answers": "moved to another question about the same clip",
                           metric: run.question_permutation(metric).mean(), "items": len(partners.partner),
                           "clips": partners.clips, "left out (no other question about the clip)": len(partners.unpaired)}])
    checks.answers_the_question(gate, run, metric, margin=float(thresholds[run.name]["answers_margin"]))


def _question_control_absent(run) -> str:
    """Why the question control does not apply to ``run`` (the not-applicable reason)."""
    from musiceval.conditions import MIN_QUESTION_CLIPS, MIN_QUESTION_ITEMS

    partners = run.question_partners()
    if not partners.partner and not partners.unpaired:
        return (f"the {run.name} protocol asks one question per clip (it scores no answer moved to another "
                "question): nothing to move an answer to")
    if not partners.partner:
        return (f"no clip has several different questions ({len(partners.unpaired)} items, none with another question "
                "about its clip): the question control needs several questions per clip (the clip is the item's group)")
    if not partners.enough:
        return (f"only {partners.describe()}; the question control needs at least {MIN_QUESTION_ITEMS} items on "
                f"{MIN_QUESTION_CLIPS} clips with another question about their clip")
    return f"{run.headline} cannot score an answer moved to another question (a reference-free metric)"


def test_parse_rate(run, gate, thresholds):
    if run.parse_rate_of_scorer:
        gate.skip(f"{run.model} {run.source}: the {run.name} parse rate counts the scorer's replies, not the model's "
                  "answers: it is one of the scorer's own gates", applicable=False)
    checks.parse_rate(gate, run, float(thresholds[run.name]["min_parse_rate"]))


def test_every_line_is_accounted_for(run, gate, thresholds):
    defaults = thresholds["defaults"]
    checks.readable(gate, run, int(defaults["max_unreadable"]))
    if checks.coverage(gate, run, float(defaults["min_coverage"])) is None:
        gate.record_table(run.name, f"{run.model} {run.source}: coverage", [{
            "answered": run.accounting.answered, "benchmark": "unknown",
            "note": "set expected_items in the answers entry to gate coverage"}])
    if getattr(run, "repeat_of", None):  # K sampled answers per item: how they agree, as a finding
        record_agreement(gate, run)
