"""``musiceval score <name>`` for a registered protocol that brings no command module of its own
(a plugin's protocol): the flags are the answers options the class declares
(:attr:`~musiceval.protocols.base.Protocol.answer_options`, one ``--key`` each, checked like the
suite config checks them), and the numbers are :meth:`~musiceval.protocols.base.Protocol.evaluate`,
with the interval and chance levels of every metric the gates use, and each control condition the
protocol scores beside Correct under ``conditions`` (the one JSON shape of docs/cli.md).
"""
from __future__ import annotations

import argparse
import math
from typing import Any

from musiceval.commands import InputError, Scorer, ScoreOutput
from musiceval.keys import SOURCE_KEYS, Key


_BOOLS = {"true": True, "yes": True, "1": True, "on": True, "false": False, "no": False, "0": False, "off": False}


def _flag_type(key: Key, name: str):
    """argparse ``type=`` of a declared key: TOML-like reading of lists, the range checked."""
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


def _controls(run: Any) -> dict[str, dict[str, Any]]:
    """``{condition: {metric: mean}}`` of every condition the protocol scored beside Correct (a
    metric it cannot score there: None)."""
    out: dict[str, dict[str, Any]] = {}
    for condition in run.conditions:
        if condition == "correct":
            continue
        out[condition] = {}
        for metric in run.metrics:
            try:
                s = run.scores(metric, condition)
            except (FileNotFoundError, ValueError, KeyError):
                out[condition][metric] = None
                continue
            out[condition][metric] = s.mean() if s.n else None
    return out


def protocol_scorer(cls: type, *, flags: dict[str, Key] | None = None, calls_llm: bool = False) -> Scorer:
    """The :class:`~musiceval.commands.Scorer` of protocol class ``cls``: load the answers (format
    detected unless ``--format``), ``cls.from_answers``, then ``evaluate()`` on Correct.

    ``flags``: the options offered as ``--key`` flags (default: the class's ``answer_options``);
    ``calls_llm``: the protocol calls an LLM while scoring (a judge): ``--replay`` replays its
    cassettes only, as on CI; without it new calls are recorded (:func:`musiceval.llm.cassettes.command_mode`)."""
    declared = {k: v for k, v in (cls.answer_options if flags is None else flags).items() if k not in SOURCE_KEYS}

    def configure(parser: argparse.ArgumentParser) -> None:
        for name, key in declared.items():
            parser.add_argument(f"--{name.replace('_', '-')}", dest=f"opt_{name}", type=_flag_type(key, name),
                                default=None, help=f"{key.help} (default {key.default!r})")
        if calls_llm:
            parser.add_argument("--replay", action="store_true",
                                help="replay the recorded LLM calls only (always on CI); a call they lack is an error")

    def score(args: argparse.Namespace) -> ScoreOutput:
        from musiceval.commands import excluded_entry, load_protocol_answers
        from musiceval.commands.summary import protocol_chances, protocol_headline
        from musiceval.protocols.base import ProtocolSettings

        if not getattr(args, "file", None):
            raise InputError(f"score {cls.name}: no FILE given; pass {cls.answer_file}")
        answers = load_protocol_answers(str(args.file), getattr(args, "format", None), cls.name)
        options = {name: getattr(args, f"opt_{name}") for name in declared if getattr(args, f"opt_{name}") is not None}
        record = "none"
        if calls_llm:
            from musiceval.llm.cassettes import command_mode

            record = command_mode(bool(args.replay))
        run = cls.from_answers(answers, ProtocolSettings(seed=getattr(args, "seed", 0) or 0, options=options,
                                                         config_dir=".", record_mode=record))
        result = dict(run.evaluate())
        failures = [{"item_id": f["item_id"], "error": f["reason"]} for f in result.pop("failures", [])]
        n = int(result.pop("n", 0))
        result.pop("n_failed", None)
        metrics = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in result.items()}
        headline = protocol_headline(run) if "correct" in run.conditions else {}
        return ScoreOutput(cls.name, n, metrics, conditions=_controls(run), failures=failures, headline=headline,
                           chances=protocol_chances(run, headline),
                           extra={"format": answers.format, "model": run.model, **excluded_entry(run)})

    doc = (cls.__doc__ or "").strip().splitlines()
    return Scorer(name=cls.name, configure=configure, score=score,
                  help=doc[0] if doc else f"the {cls.name} protocol ({cls.answer_file})",
                  formats=())  # --format offers the registered formats that feed it, no builtin short name
