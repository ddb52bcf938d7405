"""``musiceval report DIR``: whole-process time, peak memory and report.html size, per number of gates.

    .venv/bin/python benchmarks/bench_report.py [--run DIR] [--gates 1000 4000] [--repeats 3] [--quick]

The run: ``--run DIR`` (a finished results directory), else the embedded default, made once by
``pytest evals/ -n 2 --musiceval-results-dir .musiceval/results/bench-report`` (a few minutes).
Larger runs copy it with every gate repeated under a new name (``<name> #k``) up to ``--gates``;
its per-item files (``scores.jsonl.xz``, ``samples.jsonl.xz``) are kept as they are. Each measurement is one child process
``python -m musiceval.cli report <copy>``: wall time from start to exit, peak RSS of the child
(``getrusage``), the size of the report.html it wrote. The figure to compare with the goal is
seconds per 1,000 gates. There is no peer implementation to run beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def default_run() -> Path:
    run = ROOT / ".musiceval" / "results" / "bench-report"
    if not (run / "results.json").is_file():
        print(f"making the embedded default's run in {run} (pytest evals/ -n 2) ...", flush=True)
        subprocess.run([sys.executable, "-m", "pytest", "evals/", "-n", "2", "-q", "-p", "no:randomly",
                        "--musiceval-results-dir", str(run)], cwd=ROOT, check=False,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    if not (run / "results.json").is_file():
        raise SystemExit(f"no results.json in {run}: the evals run failed")
    return run


def scaled(run: Path, gates: int | None, into: Path) -> tuple[Path, int]:
    """A copy of ``run`` with its gates repeated up to ``gates`` (None: as it is)."""
    into.mkdir(parents=True)
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    base = results["gates"]
    if gates is not None and gates > len(base):
        results["gates"] = [dict(g, name=g["name"] + (f" #{k // len(base)}" if k >= len(base) else ""))
                            for k, g in ((k, base[k % len(base)]) for k in range(gates))]
    (into / "results.json").write_text(json.dumps(results), encoding="utf-8")
    for name in results.get("artefacts") or {}:  # the per-item files results.json records (and their sha256)
        shutil.copy(run / name, into / name)
    return into, len(results["gates"])


def measure(run: Path) -> dict:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "musiceval.cli", "report", str(run)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"musiceval report {run} failed:\n{proc.stderr[-2000:]}")
    return {"wall_s": wall, "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
            "html_mb": (run / "report.html").stat().st_size / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, help="a finished results directory (default: the embedded default's)")
    ap.add_argument("--gates", type=int, nargs="*", default=[1000, 4000], help="also at these many gates")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one repeat, the run as it is and 1,000 gates")
    args = ap.parse_args()
    if args.quick:
        args.repeats, args.gates = 1, [1000]
    run = args.run or default_run()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.repeats} repeat(s), median wall")
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        for size in [None, *args.gates]:
            walls, last = [], {}
            for k in range(args.repeats):
                copy, n = scaled(run, size, Path(tmp) / f"{size}-{k}")
                last = measure(copy)  # peak RSS: the largest child so far (getrusage keeps the maximum)
                walls.append(last["wall_s"])
            wall = statistics.median(walls)
            print(f"{n:6d} gates: {wall:6.2f} s wall ({', '.join(f'{w:.2f}' for w in walls)}), "
                  f"{wall / n * 1000:5.2f} s per 1,000 gates, peak RSS <= {last['peak_rss_mb']:.0f} MB, "
                  f"report.html {last['html_mb']:.2f} MB  (load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
