"""Run every benchmark in benchmarks/ (``make bench``), one child process each, and summarise.

    .venv/bin/python benchmarks/run_all.py [--smoke | --quick] [--only lexical,bootstrap] [--timeout 1800]

Every ``bench_*.py`` file is run (new ones are picked up without editing this file). With
``--smoke`` each runs with ``--smoke``, which every benchmark accepts: its smallest meaningful
size, seconds each (what tests/test_benchmarks_run.py runs). With ``--quick`` each runs at a
reduced size whose figures still mean something: the arguments in :data:`QUICK_ARGS`, or
``--quick`` for a benchmark that declares that option; a benchmark with neither runs at its full size.
Outputs stream to the terminal; the summary lists each benchmark's exit status and wall time,
and the exit status is non-zero when any benchmark failed. A benchmark that needs something
absent (a model, shared/data) fails with its own message: it is reported, never skipped silently.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: reduced sizes for --quick (benchmarks that declare --quick get "--quick" instead)
QUICK_ARGS: dict[str, list[str]] = {
    "bench_bootstrap": ["--items", "5000", "--resamples", "1000", "--repeats", "1"],
    "bench_cache": ["--n", "200"],
    "bench_embeddings": ["--n", "300"],
    "bench_evals": ["--dist", "loadgroup"],
    "bench_openai_adapter": ["--concurrency", "1", "8", "--requests", "32", "--latency", "0.05"],
    "bench_triplets": ["--n-triplets", "2000"],
}


def benchmarks(only: set[str] | None) -> list[Path]:
    found = sorted(HERE.glob("bench_*.py"))
    if only:
        found = [p for p in found if p.stem in only or p.stem.removeprefix("bench_") in only]
    return found


def arguments(path: Path, size: str | None) -> list[str]:
    """The options of one benchmark at ``size``: "smoke", "quick" or None (its full size)."""
    if size == "smoke":
        return ["--smoke"]
    if size != "quick":
        return []
    if path.stem in QUICK_ARGS:
        return QUICK_ARGS[path.stem]
    return ["--quick"] if '"--quick"' in path.read_text(encoding="utf-8") else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--smoke", dest="size", action="store_const", const="smoke",
                      help="each benchmark's smallest meaningful size (seconds each)")
    size.add_argument("--quick", dest="size", action="store_const", const="quick",
                      help="reduced sizes (seconds to a few minutes each)")
    parser.add_argument("--only", default=None, help="comma-separated benchmark names (bench_lexical or lexical)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per benchmark (default 1800)")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    paths = benchmarks(only)
    if not paths:
        print(f"no benchmark matches {args.only!r} in {HERE}", file=sys.stderr)
        return 2
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    results = []
    for path in paths:
        cmd = [sys.executable, str(path), *arguments(path, args.size)]
        print(f"\n=== {path.stem}: {' '.join(cmd[1:])}  (load average {os.getloadavg()[0]:.1f})", flush=True)
        start = time.perf_counter()
        try:
            rc = subprocess.run(cmd, cwd=ROOT, env=env, timeout=args.timeout, check=False).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        results.append((path.stem, rc, time.perf_counter() - start))
    print("\n=== summary")
    for name, rc, wall in results:
        print(f"  {name:24s} {'ok' if rc == 0 else f'FAILED ({rc})':14s} {wall:8.1f} s")
    return 0 if all(rc == 0 for _, rc, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
