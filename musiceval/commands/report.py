"""``musiceval report RESULTS_DIR``: rebuild report.md / report.html of a results directory. A
directory that contradicts its own results.json (a torn or edited artefact) exits 2: its verdict
cannot be trusted."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from musiceval import progress
from musiceval.commands import InputError
from musiceval.commands.registry import register_command

EXIT_INPUT_ERROR = 2


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results_dir", type=Path)
    progress.add_progress_arguments(parser)


def run(args: argparse.Namespace) -> int:
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


register_command("report", help="rebuild report.md / report.html of a results directory", configure=configure, run=run)
