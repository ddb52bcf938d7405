"""``musiceval score <protocol> FILE``: one protocol's scorer on recorded answers (the scorers are
in :func:`load_scorers`), the headline numbers with the gates' intervals.

``--json`` prints exactly one JSON object on stdout::

    {"protocol": .., "n": <items scored>, "n_failed": <items not scored>, "metrics": {..}, "conditions": {..}}

(``metrics``: the model's own answers, the Correct condition; ``conditions``: each control condition
scored beside them; docs/cli.md, "One JSON shape").

``--per-item FILE`` writes one JSON line per item (failed items carry ``error``); only a complete
file gets the requested name.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Sequence

from musiceval import progress
from musiceval.commands import InputError, Scorer, ScoreOutput, format_choices
from musiceval.commands.protocol_scorer import protocol_scorer
from musiceval.commands.registry import register_command
from musiceval.ranges import NON_NEGATIVE_INT, arg
from musiceval.records import to_jsonable
from musiceval.writes import WriteError, cannot_write, remove_quietly


def load_scorers() -> dict[str, Scorer]:
    """The scorer of every registered protocol, a builtin's or a plugin's: one built from its class
    (:func:`musiceval.commands.protocol_scorer.protocol_scorer`; docs/extending.md, "Score flags and output")."""
    from musiceval.protocols.base import PROTOCOLS

    return {name: protocol_scorer(cls) for name, cls in PROTOCOLS.items()}


def _no_format(protocol: str):
    """argparse ``type=`` of ``--format`` for a protocol no answer format feeds: the reason and the fix."""
    from musiceval.data.formats import no_format_for

    def refuse(text: str) -> str:
        raise argparse.ArgumentTypeError(no_format_for(protocol))

    return refuse


def _add_common(p: argparse.ArgumentParser, formats: Sequence[str] | None, protocol: str) -> None:
    """The flags every scorer has; ``formats`` None: the scorer reads no answer file (no --format)."""
    p.add_argument("file", nargs="?", help="input file (responses / outputs)")
    if formats is None:
        p.set_defaults(format=None)
    elif formats:
        p.add_argument("--format", choices=list(formats), default=None,
                       help="input layout (default: detected from the file's content)")
    else:
        p.add_argument("--format", type=_no_format(protocol), default=None,
                       help="input layout (no answer format is registered for this protocol)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    p.add_argument("--seed", type=arg(NON_NEGATIVE_INT), default=0, help="seed of every random choice (default 0)")
    p.add_argument("--per-item", metavar="FILE", help="write per-item scores and failures as JSON lines")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    progress.add_progress_arguments(p)


def configure(parser: argparse.ArgumentParser) -> None:
    protocols = parser.add_subparsers(dest="protocol", required=True, metavar="PROTOCOL")
    for name, scorer in sorted(load_scorers().items()):
        p = protocols.add_parser(name, help=scorer.help, description=scorer.help)
        formats = format_choices(name) if scorer.reads_answers else None
        _add_common(p, formats, name)
        scorer.configure(p)
        p.set_defaults(_scorer=scorer)


def _write_per_item(path: str, out: ScoreOutput) -> None:
    """Only a complete file gets the requested name: a full disk leaves the old file (or none), no
    partial one, and exits 2 with one line naming the file and the fix."""
    target = Path(path)
    tmp = target.with_name(target.name + ".partial")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            for row in out.per_item:
                fh.write(json.dumps(to_jsonable(row), allow_nan=False, default=str) + "\n")
            for row in out.failures:  # also for items scored by another metric or condition
                fh.write(json.dumps(to_jsonable(row), allow_nan=False, default=str) + "\n")
        os.replace(tmp, target)
    except OSError as exc:
        remove_quietly(tmp)
        raise WriteError(cannot_write(target, exc, "pass --per-item FILE on a writable disk")) from None


def _print_human(out: ScoreOutput) -> None:
    print(f"{out.protocol}: n={out.n} n_failed={out.n_failed}")

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, float):
            print(f"  {prefix:<40} {value:.4f}")
        else:
            print(f"  {prefix:<40} {value}")

    walk("", out.metrics)
    walk("", out.conditions)
    from musiceval.commands.summary import headline_lines, paired_lines

    if out.intervals:
        print("headline on Correct: mean  [95% interval]  n")
        for line in headline_lines(out.intervals, out.chances):
            print(line)
    if out.paired_difference:
        counts = out.extra.get("n_per_condition")
        if isinstance(counts, dict) and len(set(counts.values())) > 1:
            print(f"note: the per-condition means above cover different items "
                  f"({', '.join(f'{c} n={k}' for c, k in counts.items())}); compare conditions with the paired figure")
        print("paired difference Correct - Random: mean  [95% interval]  n")
        for line in paired_lines(out.paired_difference):
            print(line)


def run(args: argparse.Namespace) -> int:
    out: ScoreOutput = args._scorer.score(args)
    if out.headline or out.paired:
        with progress.bar(len(out.headline) + len(out.paired), desc=f"{out.protocol} intervals", unit="metric") as bar:
            out.summarize(seed=getattr(args, "seed", 0) or 0, on_metric=lambda: bar.update(1))
    if args.per_item:
        _write_per_item(args.per_item, out)
    if out.n == 0 and out.conditions:
        raise InputError(f"{args.file or out.protocol}: no answer under the Correct condition (the model's own answers "
                         f"to the items); it holds {', '.join(out.conditions)} only: add the model's answers")
    if out.n == 0:
        first = (out.failures[0].get("error") or out.failures[0].get("reason")) if out.failures else "the input has no items"
        if not args.file:  # a protocol reading no answer file (triplets): name what it read
            raise InputError(f"{out.source or out.protocol}: no item could be scored "
                             f"({out.n_failed} failed; first: {first})")
        raise InputError(f"{args.file}: no item could be scored ({out.n_failed} failed; first: {first}); "
                         f"check --format (got {args.format!r})")
    if args.json:
        print(json.dumps(to_jsonable(out.as_json()), allow_nan=False, default=str))
    else:
        _print_human(out)
    return 0


register_command("score", help="score recorded responses with one protocol", configure=configure, run=run)
