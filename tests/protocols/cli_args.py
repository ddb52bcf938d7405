"""Score through the real ``musiceval score <protocol>`` parser, without a subprocess."""
from __future__ import annotations

from musiceval.cli import build_parser
from musiceval.commands import ScoreOutput


def score(protocol: str, *argv: object) -> ScoreOutput:
    """``musiceval score <protocol> *argv`` as a :class:`ScoreOutput` (errors raise, as the scorer does)."""
    args = build_parser().parse_args(["score", protocol, *map(str, argv)])
    return args._scorer.score(args)
