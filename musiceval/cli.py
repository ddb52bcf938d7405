"""The ``musiceval`` command: one subcommand per registered command (:mod:`musiceval.commands.registry`:
``score``, ``generate``, ``merge``, ``rewrite``, ``mir-live``, ``init``, ``setup``, ``compare``,
``power``, ``cache``, ``data``, ``run``, ``report``, and any a plugin registers); each is documented
in its module under :mod:`musiceval.commands`. Input errors
print one line naming the file, line and field on stderr and exit with code 2 (a traceback only
with ``--debug``); so do unwritable outputs (a read-only file system, a missing permission).
Partial results are never written as if complete.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from musiceval import __version__, progress
from musiceval.commands import InputError
from musiceval.commands.registry import ordered
from musiceval.llm.client import MissingAPIKey
from musiceval.redact import redact

EXIT_INPUT_ERROR = 2


def build_parser() -> argparse.ArgumentParser:
    """The ``musiceval`` parser: one subparser per registered command (:mod:`musiceval.commands.registry`)."""
    parser = argparse.ArgumentParser(prog="musiceval", description="Evaluate music language models.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    progress.add_progress_arguments(parser, top_level=True)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in ordered():
        p = sub.add_parser(command.name, help=command.help)
        command.configure(p)
        if command.run is not None:
            p.set_defaults(_run=command.run)
    _no_abbreviations(parser)
    return parser


def _no_abbreviations(parser: argparse.ArgumentParser) -> None:
    """No parser, nested ones included, takes a prefix for a longer flag: ``--cache`` never
    silently stands for ``--cache-dir``."""
    parser.allow_abbrev = False
    for action in parser._actions:  # argparse keeps its subparsers here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _no_abbreviations(sub)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    progress.set_mode(getattr(args, "progress", None))
    run = args._run
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
