"""``musiceval score choice``: multiple-choice accuracy and IFR of recorded answers (MuChoMusic).

::

    musiceval score choice --format {musiceval,dasheng,muchomusic} FILE --matcher {muchomusic,strict} --json

prints ``{"protocol": "choice", "n": .., "n_failed": .., "metrics": {"accuracy": .., "ifr": ..,
"unanswered": .., "per_dimension": {"knowledge": {dim: {..}}, "reasoning": {..}}}, "conditions":
{condition: {"accuracy": .., ..}}}`` (docs/cli.md, "One JSON shape").

The headline metrics cover the ``correct`` condition in the published setting (all three
distractors; every record when the file holds only ablations). When the file holds them,
``metrics`` also has ``per_distractor_setting`` and ``runs`` (accuracy mean, std, min, max over runs with different
shuffles). ``n`` counts scored records; records that could not be read are failures.
"""
from __future__ import annotations

import argparse

from musiceval.commands import InputError, Scorer, ScoreOutput, register_scorer
from musiceval.metrics.choice import MATCHERS


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matcher", choices=sorted(MATCHERS.names()), default="muchomusic",
                        help="answer matcher: 'muchomusic' (the published rule) or 'strict' (letter tokens only)")


def _score(args: argparse.Namespace) -> ScoreOutput:
    """Flags -> :class:`musiceval.protocols.choice.ChoiceProtocol` (load_answers -> from_answers)."""
    from musiceval.protocols import ProtocolSettings
    from musiceval.protocols.choice import ChoiceProtocol
    from musiceval.commands import load_protocol_answers

    if not getattr(args, "file", None):
        raise InputError("score choice: no FILE given; pass the recorded-answers file (see --format)")
    answers = load_protocol_answers(str(args.file), getattr(args, "format", None), "choice")
    if not answers.responses and not answers.failures:
        raise InputError(f"{args.file}: no records; expected recorded answers in the {answers.format!r} layout")
    protocol = ChoiceProtocol.from_answers(answers, ProtocolSettings(seed=getattr(args, "seed", 0) or 0,
                                                                     options={"matcher": getattr(args, "matcher", "muchomusic")}))
    result = protocol.result
    failures = [{"item_id": f.item_id, "error": f.reason} for f in result.failures]
    per_item = [s.as_row() for s in result.scored] + failures
    metrics = result.metrics()
    metrics["parse_rate"] = metrics.get("ifr")
    conditions = metrics.pop("per_condition", {})  # text_only, noise, random: beside Correct
    from musiceval.commands.summary import protocol_chances, protocol_headline

    headline = protocol_headline(protocol) if "correct" in protocol.conditions else {}
    return ScoreOutput("choice", len(result.select("correct")), metrics, conditions=conditions, per_item=per_item,
                       failures=failures,
                       extra={"matcher": result.matcher, "format": answers.format, "model": protocol.model},
                       headline=headline, chances=protocol_chances(protocol, headline))


register_scorer(Scorer(
    name="choice", configure=_configure, score=_score,
    help="multiple-choice QA (MuChoMusic): accuracy, IFR and unanswered rate, per dimension",
    formats=(),
))
