"""Write docs/cli.md from the ``musiceval`` parser: ``python scripts/cli_reference.py [--check]``.

The page is the ``--help`` text of every command and subcommand, so it cannot drift from the
code; ``--check`` exits 1 when docs/cli.md is stale (the docs test runs it).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

TARGET = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps subcommands here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def render() -> str:
    os.environ["COLUMNS"] = "100"  # help wraps at the terminal width: fix it for a stable page
    from musiceval.cli import build_parser

    parser = build_parser()
    parts = ["# CLI reference", "",
             "Generated from `musiceval --help` by `python scripts/cli_reference.py`; "
             "a test fails when this page is stale.", ""]

    def section(title: str, p: argparse.ArgumentParser, level: int) -> None:
        parts.extend([f"{'#' * level} `{title}`", "", "```text", p.format_help().rstrip(), "```", ""])
        for name, sub in _subparsers(p).items():
            section(f"{title} {name}", sub, min(level + 1, 4))

    section("musiceval", parser, 2)
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/cli.md differs from the parser")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.is_file() else ""
        if current != text:
            print(f"{TARGET} is stale; run: python scripts/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
