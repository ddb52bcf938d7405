"""``musiceval score <name>``: the one scorer of every registered protocol, a builtin's or a plugin's
(docs/extending.md, "Score flags and output").

The flags are the keys the class declares (:attr:`~musiceval.protocols.base.Protocol.score_flags`,
else its ``answer_options``; one ``--key`` each, with the key's help, default, choices and range,
checked like the suite config checks them); the numbers are what its
:meth:`~musiceval.protocols.base.Protocol.score` reports (:class:`~musiceval.protocols.scoring.ScoreReport`),
with the interval and chance levels of every headline metric and each control condition scored
beside Correct under ``conditions`` (the one JSON shape of docs/cli.md).
"""
from __future__ import annotations

import argparse
from typing import Any, Mapping

from musiceval.commands import Scorer, ScoreOutput
from musiceval.keys import SOURCE_KEYS, Key

#: what ``musiceval score`` itself reads from its arguments (FILE and the flags every protocol has)
COMMON = frozenset({"file", "format", "json", "seed", "per_item", "debug", "progress", "protocol", "command"})

_BOOLS = {"true": True, "yes": True, "1": True, "on": True, "false": False, "no": False, "0": False, "off": False}


def score_flags(cls: type) -> dict[str, Key]:
    """The flags of ``musiceval score NAME``: the class's ``score_flags``, else its answer options
    (the :data:`~musiceval.keys.SOURCE_KEYS` describe a source to the suite, not a scoring option)."""
    declared = cls.score_flags if cls.score_flags is not None else cls.answer_options
    flags = {k: v for k, v in declared.items() if k not in SOURCE_KEYS}
    taken = sorted(set(flags) & COMMON)
    if taken:
        raise ValueError(f"{cls.__name__}: score flag(s) {', '.join(taken)} are flags every protocol has "
                         f"(musiceval score: {', '.join(sorted(COMMON))}); rename the key")
    return flags


def _flag_type(key: Key, name: str):
    """argparse ``type=`` of a declared key: TOML-like reading of booleans and lists, the range checked."""
    if key.range is not None and key.type is not bool:
        from musiceval.ranges import arg

        return arg(key.range)

    def read(text: str) -> Any:
        from musiceval.suite.schema import ConfigError, check_value

        value: Any = text
        if key.type is bool:
            value = _BOOLS.get(text.lower(), text)  # anything else: check_value names the type
        elif key.type is list:
            value = [part for part in text.split(",") if part]
        elif key.type is int or key.type in (float, (int, float)):
            try:
                value = int(text) if key.type is int else float(text)
            except ValueError:
                pass  # check_value names the expected type
        try:
            return check_value(value, key, f"--{name.replace('_', '-')}")
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return read


def _help(key: Key) -> str:
    """The key's help, with its default unless the help names it (or there is none to name)."""
    if key.switch or key.default is None or "(default" in key.help:
        return key.help
    return f"{key.help} (default {key.default!r})"


def add_flag(parser: argparse.ArgumentParser, name: str, key: Key) -> None:
    """``--name`` of one declared key: a switch, one of the key's words, or a checked value."""
    flag, dest = f"--{name.replace('_', '-')}", name
    if key.switch:
        parser.add_argument(flag, dest=dest, action="store_true", help=_help(key))
        return
    words = key.allowed() if key.type is str else None
    if words is not None:
        parser.add_argument(flag, dest=dest, choices=words, default=key.default, metavar=key.metavar, help=_help(key))
        return
    parser.add_argument(flag, dest=dest, type=_flag_type(key, name), default=key.default,
                        metavar=key.metavar, help=_help(key))


def flag_options(args: argparse.Namespace, flags: Mapping[str, Key]) -> dict[str, Any]:
    """``{key: value}`` of every flag, leaving out those unset (``""``, ``[]``, None), as the suite
    config passes a section's keys (:meth:`~musiceval.protocols.base.Protocol.options_from`)."""
    values = {name: getattr(args, name) for name in flags}
    return {k: v for k, v in values.items() if v not in ("", [], None)}


def protocol_scorer(cls: type) -> Scorer:
    """The :class:`~musiceval.commands.Scorer` of protocol class ``cls``."""
    flags = score_flags(cls)

    def configure(parser: argparse.ArgumentParser) -> None:
        for name, key in flags.items():
            add_flag(parser, name, key)

    def score(args: argparse.Namespace) -> ScoreOutput:
        from musiceval.protocols.scoring import ScoreRequest

        request = ScoreRequest(file=getattr(args, "file", None), format=getattr(args, "format", None),
                               options=flag_options(args, flags), seed=getattr(args, "seed", 0) or 0)
        report = cls.score(request)
        return ScoreOutput(cls.name, report.n, report.metrics, per_item=report.per_item, failures=report.failures,
                           extra=report.extra, conditions=report.conditions, headline=report.headline,
                           paired=report.paired, chances=report.chances, source=report.source or (request.file or ""),
                           scales=report.scales)

    return Scorer(name=cls.name, configure=configure, score=score, help=_summary(cls), reads_answers=bool(cls.answer_file))


def _summary(cls: type) -> str:
    """The line of ``musiceval score --help``: ``score_help``, else the docstring's first line; a
    protocol that reads no answer file and scores nothing else says so."""
    from musiceval.protocols.base import Protocol

    if not cls.answer_file and cls.score.__func__ is Protocol.score.__func__:
        return f"not scorable: {cls.__name__} sets no answer_file"
    doc = (cls.__doc__ or "").strip().splitlines()
    return cls.score_help or (doc[0] if doc else f"the {cls.name} protocol ({cls.answer_file})")
