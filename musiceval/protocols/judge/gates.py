"""The LLM judge's own gates (docs/judge.md), for each judged answer source.

The judge is part of the scorer, so these are self-checks: reported apart from the model's gates,
run whenever a judged source is (``musiceval_scorer_check``), and a judge that fails one makes the
verdict ERROR (its scores cannot be trusted). The model's own
gates under the judge are the generic ones (:mod:`musiceval.evals.model_gates`: the judged score
beats the answers moved to other items, the model listens, answers the question; regression against
a baseline judged by the same judge).

- **the judge's replies are readable**: the share of its replies the parser could read is at least
  ``[judge] min_parse_rate`` (an unreadable reply is a counted failure with the reply kept, never a
  0); a judge that says nothing readable cannot grade the model;
- **the judge reads the answer**: the item's own reference, read as the answer, scores above
  another clip's reference read as the answer (paired by item, clustered by clip); a judge that
  ignores the answer scores both alike and fails;
- **the judge keeps its verdict when the answers swap seats** (pairwise, rubric): the share of items
  whose preference (rubric: the answer's score above, equal to or below the reference's) does not
  follow the seat is at least ``1 - [judge] max_flip_rate``;
- **the judge agrees with itself** (several samples at the judge's temperature): the share of its
  samples agreeing with their majority is at least ``[judge] min_self_consistency``;
- **the judge agrees with exact scoring** where the answer is known (multiple-choice items, pointwise):
  the share of items the judge and MuChoMusic's option matcher call alike is at least
  ``[judge] min_exact_agreement``, Cohen's kappa of the two in the gate's name.
"""
from __future__ import annotations

import json

import pytest

from musiceval.protocols.base import PARSE_RATE
from musiceval.protocols.judge.engine import modes_with
from musiceval.protocols.judge.protocol import SCORE
from musiceval.stats.scales import BINARY, UNIT

#: the tests and fixtures this module contributes (``musiceval.evals.release_gates`` gathers them)
__all__ = ["test_judge_replies_are_readable", "test_judge_reads_the_answer", "test_judge_keeps_its_verdict_across_seats", "test_judge_agrees_with_itself",
           "test_judge_agrees_with_exact_scoring"]
PROTOCOL = "judge"

#: the judge belongs to the scorer: its checks are the suite's own, never gates of the model
pytestmark = [pytest.mark.musiceval_self_check, pytest.mark.musiceval_scorer_check]


def test_judge_replies_are_readable(run, gate, thresholds):
    bar = float(thresholds[PROTOCOL]["min_parse_rate"])
    gate.at_least(run.scores(PARSE_RATE, "correct"), bar,
                  name=f"{run.source}: the judge's replies are readable (parse rate at least {bar:.0%})",
                  protocol=PROTOCOL, metric=PARSE_RATE, scale=run.metric_info(PARSE_RATE).scale)


def test_judge_reads_the_answer(run, gate):
    audit = run.audit()
    gate.paired_greater(audit["reference_in_place"], audit["reference_moved"],
                        name=f"{run.source}: the judge scores each item's reference above another clip's",
                        protocol=PROTOCOL, metric=SCORE, scale=run.metric_info(SCORE).scale)


def test_judge_keeps_its_verdict_across_seats(run, gate, thresholds):
    same = run.audit()["same_verdict_both_seats"]
    if same is None:
        one, both = modes_with(two_seats=False), modes_with(two_seats=True)
        gate.skip(f"{run.source}: the judge grades one answer at a time (mode {' or '.join(one)}): no seats to swap; "
                  f"[judge] mode = {' or '.join(map(json.dumps, both))} compares the answer with the reference in both "
                  "orders", applicable=False)
    bar = 1.0 - float(thresholds[PROTOCOL]["max_flip_rate"])
    gate.at_least(same, bar, name=f"{run.source}: the judge keeps its verdict when the answers swap seats "
                                  f"(at least {bar:g} of items)", protocol=PROTOCOL, metric="same_verdict_both_seats",
                  scale=BINARY)  # per item: the same verdict in both seats or not


def test_judge_agrees_with_itself(run, gate, thresholds):
    agree = run.audit()["self_consistency"]
    if agree is None:
        gate.skip(f"{run.source}: one judge reply per prompt: set [judge] samples > 1 and its temperature > 0 to "
                  "measure whether the judge agrees with itself", applicable=False)
    bar = float(thresholds[PROTOCOL]["min_self_consistency"])
    gate.at_least(agree, bar, name=f"{run.source}: the judge's samples agree with their majority (at least {bar:g})",
                  protocol=PROTOCOL, metric="self_consistency", scale=UNIT)  # per item: a share of its samples


def test_judge_agrees_with_exact_scoring(run, gate, thresholds):
    audit = run.audit()
    agree = audit["agrees_with_exact"]
    if agree is None:
        gate.skip(f"{run.source}: no item has a known answer to score exactly (multiple-choice items judged "
                  "pointwise): nothing to check the judge against", applicable=False)
    bar = float(thresholds[PROTOCOL]["min_exact_agreement"])
    gate.at_least(agree, bar, name=f"{run.source}: the judge calls answers right as the option matcher does (at least "
                                   f"{bar:g} of items; Cohen's kappa {audit['kappa_with_exact']:.3f})",
                  protocol=PROTOCOL, metric="agrees_with_exact", scale=BINARY)  # per item: agrees or not
