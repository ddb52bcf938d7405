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
             "a test fails when this page is stale.", "",
             "Shared by every command:", "",
             "- **Progress**: commands that can run for more than a few seconds (`score`, `generate`, "
             "`report`, `score triplets`) draw a progress bar with items/s and the ETA on stderr, never on "
             "stdout (`--json` prints exactly one JSON object either way). The bar is shown when stderr is a "
             "terminal; `--progress` forces it on (logs, CI), `--no-progress` silences it.",
             "- **One JSON shape**: `musiceval score <protocol> --json` prints the same shape for every "
             "protocol, a plugin's included: `protocol`, `model`, `format`, `n` (items scored), `n_failed`, "
             "`metrics` {metric: value} (the model's own answers: the Correct condition), `conditions` "
             "{condition: {metric: value}} (each control condition scored beside Correct: Random, noise, "
             "text only, Skyline, Adversarial ...; absent when there is none), then what a protocol adds "
             "(`per_label` for factual, `task` and `baseline` for mir, ...). `score freeform` also gives "
             "`n_per_condition` {condition: items}, and `score factual` its permutation `chance` block.",
             "- **Intervals**: `musiceval score` prints every headline metric on Correct with its 95% interval "
             "and n, the interval the release gates use (`musiceval.gates.Gate.interval`: calibrated by the "
             "data's shape, whole tracks resampled when items share one), e.g. "
             "`accuracy  0.6850  [0.617, 0.747]  n=200  (calibrated interval; 1 unparsed)`, followed by the "
             "metric's chance levels and trivial baselines (`vs majority-class baseline: 0.1400`). `--json` adds "
             "`intervals` {metric: [low, high]}, `n_scored` {metric: n} and `chances` {metric: [{name, kind, value}]}. "
             "`score freeform` with Correct and Random adds `paired_difference` {metric: {estimate, low, high, n}}: "
             "Correct minus Random on the items both conditions scored.",
             "- **Caches**: `--cache-dir DIR` is the root of every on-disk cache (embeddings in `DIR/embeddings`, "
             "model responses in `DIR/responses`, the layout `pytest --musiceval-cache-dir DIR` reads). Without it "
             "the root is `$MUSICEVAL_CACHE`, else the platform cache directory (`platformdirs`, e.g. "
             "`~/.cache/musiceval` on Linux; `$XDG_CACHE_HOME/musiceval` when platformdirs is not installed). "
             "Options are spelled out in full: a prefix such as `--cache` is refused, never taken for "
             "`--cache-dir`. Nothing is evicted by itself (BERTScore keeps "
             "each text's token embeddings: about 420 MB for one model's CMI-Bench captions with MiniLM): "
             "`musiceval cache` lists rows and MB per encoder, `musiceval cache --drop 'bertscore:*'` "
             "deletes an encoder's rows and compacts the file.",
             "- **Numbers** are checked against their range (`musiceval.ranges`, the rule the suite config "
             "uses): every number is finite (`nan`, `inf` are refused); counts (`--n-permutations`, "
             "`--random-draws`, `--max-triplets`, `--max-tokens`, `--limit` ...) are integers >= 1 (permutations at "
             "most 1,000,000: [hardening](hardening.md) says why), seeds >= 0, "
             "`--alpha` and `--power` in (0, 1), margins and `--temperature` >= 0, `power --drop` > 0. A number "
             "out of range exits 2 with argparse's usage line and one error line naming the flag, the range and "
             "the value.",
             "- **Every record accounted for**: `musiceval score` prints `n` (scored), `n_failed` (unreadable "
             "records and answers) and, when a protocol's rule left items out, `excluded` "
             "(`{rule: {n, ids, why, conditions}}`, `musiceval.exclusions`; e.g. a MusicQA reference that only "
             "copies the question, or an item with no Random partner, out of Random only).",
             "- `musiceval --version` prints the installed version.", ""]

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
