"""``musiceval report DIR``: whole-process time, peak memory and report.html size, per number of gates.

    .venv/bin/python benchmarks/bench_report.py [--run DIR] [--gates 1000 4000] [--repeats 3] [--quick] [--smoke]

The run: ``--run DIR`` (a finished results directory), else the embedded default, made once by
``pytest evals/ -n 2 --musiceval-results-dir .musiceval/results/bench-report`` (a few minutes);
``--smoke`` makes a small one instead (MiDashengLM-7B's multiple-choice gates, in a temporary
directory) and measures it as it is and at 100 gates, once. Larger runs copy it with every gate
repeated under a new name (``<name> #k``) up to ``--gates``, the verdict decided again from the
copy's gates as its session would have (``musiceval report`` checks it); its per-item files
(``scores.jsonl.xz``, ``samples.jsonl.xz``) are kept as they are. Each measurement is one child
process ``python -m musiceval.cli report <copy>``: wall time from start to exit, peak RSS of the
child (``wait4``: its own, not the largest of the children so far), the size of the report.html it
wrote. The figure to compare with the goal is seconds per 1,000 gates. There is no peer
implementation to run beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from musiceval.verdict import decide

ROOT = Path(__file__).resolve().parents[1]
#: the embedded default's run, made once and kept (.musiceval/ is git-ignored)
DEFAULT_RUN = ROOT / ".musiceval" / "results" / "bench-report"
#: the gates of the smoke run (pytest -k)
SMOKE_SELECT = "MiDashengLM-7B/choice"


def evals_run(run: Path, select: str | None = None) -> Path:
    """``run``, made by ``pytest evals/ -n 2`` (of the gates ``-k select`` picks) unless it holds a results.json."""
    if not (run / "results.json").is_file():
        print(f"making the embedded default's run in {run} (pytest evals/ -n 2{f' -k {select}' if select else ''}) ...",
              flush=True)
        subprocess.run([sys.executable, "-m", "pytest", "evals/", "-n", "2", "-q", "-p", "no:randomly",
                        *(["-k", select] if select else []), "--musiceval-results-dir", str(run)],
                       cwd=ROOT, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if not (run / "results.json").is_file():
        raise SystemExit(f"no results.json in {run}: the evals run failed")
    return run


def decide_again(results: dict) -> None:
    """The counts and verdict of a copy whose gates were repeated, as its session would have written
    them: decided from the copy's gates and the inputs the session recorded."""
    results["counts"] = dict(Counter(g["outcome"] for g in results["gates"]))
    detail = results.get("verdict_detail")
    if isinstance(detail, dict) and "inputs" in detail:
        verdict = decide(results["gates"], **detail["inputs"])
        results["verdict"], results["verdict_detail"] = verdict.word, verdict.as_dict()


def scaled(run: Path, gates: int | None, into: Path) -> tuple[Path, int]:
    """A copy of ``run`` with its gates repeated up to ``gates`` (None: as it is)."""
    into.mkdir(parents=True)
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    base = results["gates"]
    if gates is not None and gates > len(base):
        results["gates"] = [dict(g, name=g["name"] + (f" #{k // len(base)}" if k >= len(base) else ""))
                            for k, g in ((k, base[k % len(base)]) for k in range(gates))]
        decide_again(results)
    (into / "results.json").write_text(json.dumps(results), encoding="utf-8")
    for name in results.get("artefacts") or {}:  # the per-item files results.json records (and their sha256)
        shutil.copy(run / name, into / name)
    return into, len(results["gates"])


def measure(run: Path) -> dict:
    """Wall time, peak RSS (this child's own, from ``wait4``) and report.html size of ``musiceval report run``."""
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "musiceval.cli", "report", str(run)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"musiceval report {run} failed:\n{stderr[-2000:]}")
    return {"wall_s": wall, "peak_rss_mb": usage.ru_maxrss / 1024, "html_mb": (run / "report.html").stat().st_size / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, help="a finished results directory (default: the embedded default's)")
    ap.add_argument("--gates", type=int, nargs="*", default=[1000, 4000], help="also at these many gates")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one repeat, the run as it is and 1,000 gates")
    ap.add_argument("--smoke", action="store_true", help="a small run of its own, as it is and at 100 gates, one repeat")
    args = ap.parse_args()
    if args.quick:
        args.repeats, args.gates = 1, [1000]
    if args.smoke:
        args.repeats, args.gates = 1, [100]
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        run = args.run or (evals_run(Path(tmp) / "smoke", SMOKE_SELECT) if args.smoke else evals_run(DEFAULT_RUN))
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.repeats} repeat(s), median wall")
        for size in [None, *args.gates]:
            walls, last = [], {}
            for k in range(args.repeats):
                copy, n = scaled(run, size, Path(tmp) / f"{size}-{k}")
                last = measure(copy)
                walls.append(last["wall_s"])
            wall = statistics.median(walls)
            print(f"{n:6d} gates: {wall:6.2f} s wall ({', '.join(f'{w:.2f}' for w in walls)}), "
                  f"{wall / n * 1000:5.2f} s per 1,000 gates, peak RSS {last['peak_rss_mb']:.0f} MB, "
                  f"report.html {last['html_mb']:.2f} MB  (load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
