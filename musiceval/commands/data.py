"""``musiceval data list | prepare NAME | check NAME``: the benchmark catalogue from the shell.

- ``list`` prints every registered benchmark: source and revision (or why it is unpinned),
  licence, items, where the audio comes from, protocol, answer format, controls and the published
  human accuracy with its source, where there is one (``--json`` for one JSON object);
- ``prepare NAME [--audio-dir DIR] [--questions FILE]`` fetches and checks it
  (:mod:`musiceval.catalogue.prepare`), prints the counts, every missing or corrupt clip (up to
  20, all in the lock) and the ``musiceval generate`` command for the manifest;
- ``check [NAME]`` re-hashes the question files and clips against the lock
  (:mod:`musiceval.catalogue.check`); without a name, every benchmark prepared under the data
  root; exit 1 with one line per problem.

Data root: ``--data-root`` or ``$MUSICEVAL_DATA``, else ``.musiceval/data``. Progress bars
(``--progress`` / ``--no-progress``, :mod:`musiceval.progress`) only when stderr is a terminal
unless forced.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from musiceval import progress
from musiceval.catalogue.spec import BENCHMARKS, benchmark_names, get_benchmark
from musiceval.commands.registry import register_command


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="data_command", required=True, metavar="{list,prepare,check}")
    ls = sub.add_parser("list", help="the registered benchmarks: source, revision, licence, items, audio, protocol")
    ls.add_argument("--json", action="store_true", help="print one JSON object")
    ls.set_defaults(_run=run_list)
    for name, helptext, func in (("prepare", "download, check every clip, write manifest.jsonl and the lock file", run_prepare),
                                 ("check", "re-verify prepared data against its lock file", run_check)):
        p = sub.add_parser(name, help=helptext)
        if name == "check":
            p.add_argument("names", metavar="NAME", nargs="?", default=None,
                           help="benchmark name(s), comma-separated (default: every benchmark prepared under the data root)")
        else:
            p.add_argument("names", metavar="NAME", help="benchmark name(s), comma-separated (`musiceval data list`)")
        p.add_argument("--data-root", type=Path, default=None, help="root of prepared benchmarks (default $MUSICEVAL_DATA or .musiceval/data)")
        progress.add_progress_arguments(p)
        if name == "prepare":
            p.add_argument("--audio-dir", type=Path, default=None, help="folder holding the clips (benchmarks that ship none)")
            p.add_argument("--questions", type=Path, default=None, help="use this copy of the question file (or the folder holding the files of an entry that reads several) instead of downloading it")
        p.set_defaults(_run=func)


def _row(bench) -> dict:
    return {"name": bench.name, "title": bench.title, "source": bench.source.describe(), "revision": bench.source.revision,
            "unpinned": bench.source.unpinned, "licence": bench.licence, "items": bench.items, "audio": bench.audio,
            "protocol": bench.protocol, "answer_format": bench.answer_format, "prompt": bench.prompt,
            "parser": bench.parser, "controls": list(bench.controls), "verified": bench.verified,
            "human_baselines": {k: b.as_table() for k, b in bench.human_baselines.items()},
            "prepared_as": bench.prepared_as, "source_kind": bench.source.kind,
            # every file it reads: its sha256 at the pinned revision, or None where none is pinned
            "digests": {name: bench.digests.get(name) for name in (*bench.question_files, *bench.digests)}}


def _digest_lines(row: dict) -> list[str]:
    """``data list``'s lines on the sha256 of the files an entry reads: each pinned one, then the
    others in one line saying why none is pinned."""
    lines = [f"sha256 of {name}: {digest}" for name, digest in row["digests"].items() if digest]
    unpinned = [name for name, digest in row["digests"].items() if not digest]
    if unpinned:
        names = ", ".join(unpinned) if len(unpinned) <= 3 else f"{unpinned[0]} and {len(unpinned) - 1} more"
        why = ("your own files, none upstream to pin (the lock records each one's)" if row["source_kind"] == "local"
               else "not read here (the lock records the fetched file)")
        lines.append(f"sha256 of {names}: {why}")
    return lines


def run_list(args: argparse.Namespace) -> int:
    rows = [_row(b) for _, b in BENCHMARKS.items()]
    if args.json:
        print(json.dumps({"benchmarks": rows}))
        return 0
    for row in rows:
        items = f"{row['items']:,}" if row["items"] is not None else "from the file"
        print(f"{row['name']:<28} {row['protocol']:<9} {items:>14} items  {row['licence'].split(';')[0]}")
        print(f"{'':<28} source: {row['source']}")
        print(f"{'':<28} audio: {row['audio']}; controls: {', '.join(row['controls']) or 'none'}")
        for line in _digest_lines(row):
            print(f"{'':<28} {line}")
        if row["prepared_as"]:
            print(f"{'':<28} reads the prepared folder of {row['prepared_as']} (the same questions and clips)")
        for subset, human in row["human_baselines"].items():
            print(f"{'':<28} human baseline ({subset}): {human['accuracy']:.4g} ({human['source']})")
    return 0


def _root(args: argparse.Namespace) -> Path:
    from musiceval.catalogue.prepare import data_root

    return data_root(args.data_root)


def _bars(args: argparse.Namespace) -> bool:
    """Progress bars: ``--progress`` / ``--no-progress``, else only when stderr is a terminal."""
    progress.set_mode(getattr(args, "progress", None))
    return progress.enabled()


def run_prepare(args: argparse.Namespace) -> int:
    from musiceval.catalogue.fetch import FetchError
    from musiceval.catalogue.prepare import PrepareError, prepare

    benches = benchmark_names(args.names)
    if args.questions is not None and len(benches) != 1:
        raise PrepareError("--questions names one benchmark's question file; prepare one benchmark at a time")
    for bench in benches:
        try:
            report = prepare(bench, _root(args), audio_dir=args.audio_dir, questions=args.questions,
                             progress=_bars(args), log=lambda line: print(line, file=sys.stderr, flush=True))
        except FetchError as exc:
            raise PrepareError(str(exc)) from None
        for warning in report.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        print(report.summary())
        for line in report.problem_lines():
            print(f"  {line}")
        data_dir = f" --data-dir {report.audio_root}" if report.audio_root != report.directory / "audio" else " --data-dir " + str(report.audio_root)
        print(f"  manifest: {report.manifest}\n  generate: musiceval generate --model MODEL_SPEC --dataset {report.manifest}{data_dir}")
    return 0


def prepared_benchmarks(root: Path) -> list:
    """The registered benchmarks with a lock file under ``root`` (``check`` without a name)."""
    from musiceval.catalogue.lock import LOCK_NAME
    from musiceval.catalogue.prepare import PrepareError, prepared_dir

    found = [bench for _, bench in BENCHMARKS.items() if (prepared_dir(root, bench) / LOCK_NAME).is_file()]
    if not found:
        raise PrepareError(f"{root}: no prepared benchmark here (no {LOCK_NAME} under it); run `musiceval data prepare NAME` "
                           "first, or pass --data-root (or $MUSICEVAL_DATA) where they were prepared")
    return found


def run_check(args: argparse.Namespace) -> int:
    from musiceval.catalogue.check import check
    from musiceval.catalogue.prepare import prepared_dir

    root = _root(args)
    failed = 0
    for bench in benchmark_names(args.names) if args.names else prepared_benchmarks(root):
        problems = check(bench, prepared_dir(root, bench), progress=_bars(args))
        for line in problems:
            print(line)
        if problems:
            failed += 1
        else:
            print(f"{bench.name}: OK (question files and every clip match the lock)")
    return 1 if failed else 0


__all__ = ["configure", "get_benchmark"]


register_command("data", help="the benchmark catalogue: list, prepare (download, hash, manifest), check",
                 configure=configure)
