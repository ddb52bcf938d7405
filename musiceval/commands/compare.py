"""``musiceval compare RUN_A RUN_B [RUN_C ...]``: paired regression verdicts between results dirs.

::

    musiceval compare results/v1 results/v2 --margin 0.02 --margin mir/accuracy=0.03 \\
        --lower-is-better wer [--json | --csv FILE] [--html FILE] [--fail-on-regression]

The first run is the baseline of the second (and with more runs every earlier run is the
baseline of every later one; a leaderboard follows). Exit status: 0 compared; 1 with
``--fail-on-regression`` when some comparison is ``inferior`` (a non-inferiority FAIL);
2 when the runs cannot be compared (scorer-side provenance differs: the differences are listed
on stderr; runs that asked each item a different number of times, ``--repeats``, without
``--per-item-mean``; missing or unreadable results dirs).
"""
from __future__ import annotations

import argparse
import json
import math
import sys

from musiceval.results.comparison import DEFAULT_MARGIN, NotComparable, compare_runs, format_table, leaderboard
from musiceval.ranges import LEVEL, NON_NEGATIVE, arg
from musiceval.records import to_jsonable
from musiceval.commands.registry import register_command

EXIT_REGRESSION = 1
EXIT_NOT_COMPARABLE = 2


def _margins(values: list[str]) -> tuple[float, dict[str, float]]:
    default, per_key = DEFAULT_MARGIN, {}
    for v in values:
        key, sep, num = v.rpartition("=")
        try:
            number = float(num)
        except ValueError:
            number = math.nan
        if number not in NON_NEGATIVE:
            raise ValueError(f"--margin {v!r}: expected {NON_NEGATIVE.describe()} or KEY=NUMBER "
                             "(KEY: protocol/metric, metric or protocol)")
        if sep:
            per_key[key] = number
        else:
            default = number
    return default, per_key


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", help="results directories (results.json + scores.jsonl.xz), baseline first")
    parser.add_argument("--margin", action="append", default=[], metavar="[KEY=]NUMBER",
                        help=f"non-inferiority margin in the metric's units; bare number: the default "
                             f"({DEFAULT_MARGIN}); KEY=NUMBER for a protocol/metric, metric or protocol (repeatable)")
    parser.add_argument("--lower-is-better", action="append", default=[], metavar="METRIC",
                        help="metric for which lower is better (WER, CER, MAE... are recognised by name)")
    parser.add_argument("--condition", action="append", default=None, metavar="NAME",
                        help="condition to compare (repeatable; default: correct; 'all' for every condition)")
    parser.add_argument("--alpha", type=arg(LEVEL), default=0.05, help="two-sided interval level 1-alpha (default 0.05)")
    parser.add_argument("--power", type=arg(LEVEL), default=0.8, help="power of the minimum detectable effect (default 0.8)")
    parser.add_argument("--adjust", choices=["holm", "bh"], default="holm",
                        help="p-value adjustment across comparisons (default holm)")
    parser.add_argument("--per-item-mean", action="store_true",
                        help="runs with different --repeats: compare each item's mean over its sampled repeats "
                             "(refused without it: docs/regression-gates.md, \"Runs with different repeats\")")
    parser.add_argument("--json", action="store_true", help="print one JSON object: rows, leaderboard, notes")
    parser.add_argument("--csv", metavar="FILE", help="also write the table as CSV")
    parser.add_argument("--html", metavar="FILE", help="also write the table (and the leaderboard) as one HTML page")
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="exit 1 when a comparison is 'inferior' (for CI)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def run(args: argparse.Namespace) -> int:
    if len(args.runs) < 2:
        print("musiceval: error: compare needs at least two results dirs, the baseline first", file=sys.stderr)
        return EXIT_NOT_COMPARABLE
    default, per_key = _margins(args.margin)
    conditions = None if args.condition and "all" in args.condition else (args.condition or ["correct"])
    try:
        table, notes = compare_runs(*args.runs, margins=per_key, default_margin=default,
                                    lower_is_better=args.lower_is_better, alpha=args.alpha, power=args.power,
                                    adjust=args.adjust, conditions=conditions, per_item_mean=args.per_item_mean)
    except NotComparable as exc:
        print(f"musiceval: error: {exc}", file=sys.stderr)
        return EXIT_NOT_COMPARABLE
    board = leaderboard(table) if len(args.runs) > 2 else None
    if args.csv:
        table.to_csv(args.csv, index=False)
    if args.html:
        _write_html(args.html, table, notes, board)
    if args.json:
        out = {"rows": table.to_dict(orient="records"), "notes": notes}
        if board is not None:
            out["leaderboard"] = board.to_dict(orient="records")
        print(json.dumps(to_jsonable(out), allow_nan=False, default=str))
    else:
        print(format_table(table, notes, with_leaderboard=len(args.runs) > 2))
    if args.fail_on_regression and not table.empty and (table.verdict == "inferior").any():
        return EXIT_REGRESSION
    return 0


def _write_html(path: str, table, notes: list[str], board) -> None:
    import os
    from pathlib import Path

    from musiceval.report.compare_page import render_compare_html

    page = render_compare_html(table.to_dict(orient="records"), notes,
                               board.to_dict(orient="records") if board is not None else ())
    target = Path(path)
    tmp = target.with_name(target.name + ".partial")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, target)  # only a complete page gets the requested name


register_command("compare", help="paired regression verdicts between results dirs (baseline first)",
                 configure=configure, run=run)
