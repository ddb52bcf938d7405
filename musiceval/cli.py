"""The ``musiceval`` command: ``init``, ``score``, ``generate``, ``merge``, ``rewrite``, ``mir-live``, ``compare``,
``power``, ``cache``, ``data``, ``run`` and ``report``.

``musiceval score <protocol> FILE --json`` prints exactly one JSON object on stdout::

    {"protocol": .., "n": <items scored>, "n_failed": <items not scored>, "metrics": {..}}

``--per-item FILE`` writes one JSON line per item (failed items carry ``error``). Input errors
print one line naming the file, line and field on stderr and exit with code 2 (a traceback only
with ``--debug``); so do unwritable outputs (a read-only file system, a missing permission).
Partial results are never written as if complete.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Sequence

from musiceval import __version__, progress
from musiceval.llm.client import MissingAPIKey
from musiceval.ranges import NON_NEGATIVE_INT, arg
from musiceval.records import to_jsonable
from musiceval.redact import redact
from musiceval.commands import InputError, ScoreOutput, format_choices, load_scorers

EXIT_INPUT_ERROR = 2


def _add_common(p: argparse.ArgumentParser, formats: Sequence[str]) -> None:
    p.add_argument("file", nargs="?", help="input file (responses / outputs)")
    p.add_argument("--format", choices=list(formats), default=None,
                   help="input layout (default: detected from the file's content)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    p.add_argument("--seed", type=arg(NON_NEGATIVE_INT), default=0, help="seed of every random choice (default 0)")
    p.add_argument("--per-item", metavar="FILE", help="write per-item scores and failures as JSON lines")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    progress.add_progress_arguments(p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="musiceval", description="Evaluate music language models.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    progress.add_progress_arguments(parser, top_level=True)
    sub = parser.add_subparsers(dest="command", required=True)

    score = sub.add_parser("score", help="score recorded responses with one protocol")
    protocols = score.add_subparsers(dest="protocol", required=True, metavar="PROTOCOL")
    for name, scorer in sorted(load_scorers().items()):
        p = protocols.add_parser(name, help=scorer.help, description=scorer.help)
        _add_common(p, tuple(dict.fromkeys([*scorer.formats, *format_choices(name)])))
        scorer.configure(p)
        p.set_defaults(_scorer=scorer)

    try:
        from musiceval import generate
    except ImportError:
        generate = None  # type: ignore[assignment]
    if generate is not None:
        g = sub.add_parser("generate", help="run a model over a dataset and fill the response cache")
        generate.configure(g)
        g.set_defaults(_run=generate.run)

    from musiceval.models import merge as merge_command

    merge_command.register(sub)

    from musiceval.llm import rewrite_command

    rw = sub.add_parser("rewrite", help="Skyline/Adversarial rewrites of references by an LLM (recorded in a cassette)")
    rewrite_command.configure(rw)
    rw.set_defaults(_run=rewrite_command.run)

    from musiceval.scoring import mir_live

    ml = sub.add_parser("mir-live", help="answer CMI-Bench instruction files with a model and score them")
    mir_live.configure(ml)
    ml.set_defaults(_run=mir_live.run)

    from musiceval.commands import cache as cache_command, compare as compare_command, init as init_command
    from musiceval.commands import power as power_command

    init = sub.add_parser("init", help="set up a repository to gate its model: musiceval.toml, evals/, CI files")
    init_command.configure(init)
    init.set_defaults(_run=init_command.run)

    cmp_ = sub.add_parser("compare", help="paired regression verdicts between results dirs (baseline first)")
    compare_command.configure(cmp_)
    cmp_.set_defaults(_run=compare_command.run)
    pw = sub.add_parser("power", help="items needed to detect a drop of d, from a pilot run")
    power_command.configure(pw)
    pw.set_defaults(_run=power_command.run)
    cache = sub.add_parser("cache", help="what the on-disk caches hold; drop an encoder's embeddings")
    cache_command.configure(cache)
    cache.set_defaults(_run=cache_command.run)

    from musiceval.commands import data as data_command, run as run_command

    data = sub.add_parser("data", help="the benchmark catalogue: list, prepare (download, hash, manifest), check")
    data_command.configure(data)
    run = sub.add_parser("run", help="prepare benchmarks, generate with a model, score and gate: one verdict")
    run_command.configure(run)
    run.set_defaults(_run=run_command.run)

    report = sub.add_parser("report", help="rebuild report.md / report.html of a results directory")
    report.add_argument("results_dir", type=Path)
    progress.add_progress_arguments(report)
    report.set_defaults(_run=_run_report)
    return parser


def _run_report(args: argparse.Namespace) -> int:
    from musiceval.report import rebuild

    results_dir: Path = args.results_dir
    if not results_dir.is_dir():
        raise InputError(f"{results_dir}: not a directory; pass the results directory a pytest run printed")
    results = results_dir / "results.json"
    if os.path.lexists(results) and not results.is_file():  # a FIFO or directory is refused, never opened
        raise InputError(f"{results}: not a regular file; pass the results directory a pytest run printed")
    with progress.bar(1, desc=f"report {results_dir.name}", unit="report") as bar:
        run = rebuild(results_dir)
        bar.update(1)
    torn = [p for p in run["problems"] if "do not match what results.json recorded" in p or "cannot be read" in p]
    rows = len(run["problems"]) - len(torn)
    skipped = f"; {rows} bad row(s) skipped, listed under Errors" if rows else ""
    print(f"{results_dir / 'report.html'}  {run['verdict']} ({', '.join(f'{v} {k}' for k, v in run['counts'].items())}){skipped}")
    for problem in torn:  # the directory contradicts its own results.json: its verdict cannot be trusted
        print(f"musiceval: error: {problem}", file=sys.stderr)
    return EXIT_INPUT_ERROR if torn else 0


def _write_per_item(path: str, out: ScoreOutput) -> None:
    target = Path(path)
    tmp = target.with_name(target.name + ".partial")
    with open(tmp, "w", encoding="utf-8") as fh:
        for row in out.per_item:
            fh.write(json.dumps(to_jsonable(row), allow_nan=False, default=str) + "\n")
        for row in out.failures:  # also for items scored by another metric or condition
            fh.write(json.dumps(to_jsonable(row), allow_nan=False, default=str) + "\n")
    os.replace(tmp, target)  # only a complete file gets the requested name


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
    from musiceval.commands.summary import headline_lines, paired_lines

    if out.intervals:
        print("headline on Correct: mean  [95% interval]  n")
        for line in headline_lines(out.intervals, out.chances):
            print(line)
    if out.paired_difference:
        counts = out.extra.get("n_scored")
        if isinstance(counts, dict) and len(set(counts.values())) > 1:
            print(f"note: the per-condition means above cover different items "
                  f"({', '.join(f'{c} n={k}' for c, k in counts.items())}); compare conditions with the paired figure")
        print("paired difference Correct - Random: mean  [95% interval]  n")
        for line in paired_lines(out.paired_difference):
            print(line)


def _run_score(args: argparse.Namespace) -> int:
    out: ScoreOutput = args._scorer.score(args)
    if out.headline or out.paired:
        with progress.bar(len(out.headline) + len(out.paired), desc=f"{out.protocol} intervals", unit="metric") as bar:
            out.summarize(seed=getattr(args, "seed", 0) or 0, on_metric=lambda: bar.update(1))
    if args.per_item:
        _write_per_item(args.per_item, out)
    if out.n == 0:
        first = (out.failures[0].get("error") or out.failures[0].get("reason")) if out.failures else "the input has no items"
        raise InputError(f"{args.file}: no item could be scored ({out.n_failed} failed; first: {first}); "
                         f"check --format (got {args.format!r})")
    if args.json:
        print(json.dumps(to_jsonable(out.as_json()), allow_nan=False, default=str))
    else:
        _print_human(out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    progress.set_mode(getattr(args, "progress", None))
    run = getattr(args, "_run", None) or _run_score
    try:
        return int(run(args) or 0)
    except (InputError, MissingAPIKey, OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        if getattr(args, "debug", False):
            raise
        if isinstance(exc, IsADirectoryError):
            exc = InputError(f"{exc.filename}: is a directory; pass a file")
        elif isinstance(exc, RecursionError):
            exc = InputError(f"{getattr(args, 'file', None) or 'input'}: nested too deeply to process")
        elif isinstance(exc, OSError) and exc.filename and exc.strerror:  # EROFS, EACCES, ENOSPC ...
            exc = InputError(f"{exc.filename}: {exc.strerror}; pass a readable input and a writable output path")
        print(redact(f"musiceval: error: {exc}"), file=sys.stderr)
        return EXIT_INPUT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
