"""Wall time of the release gates (``pytest evals/ -n 4``) on the embedded default, cold and warm.

    .venv/bin/python benchmarks/bench_evals.py [--workers 4] [--repeats 1] [--dist loadgroup load] [-k EXPR] [--smoke]

Each run is a child ``pytest evals/ -n N`` with its own results directory. *Cold* starts from an
empty cache directory (every embedding, BERTScore token row and response computed); *warm*
reruns on the cache the cold run filled. For each ``--dist`` mode given the benchmark runs cold
then warm, modes interleaved per repeat, and prints wall seconds, the summed CPU seconds of the
run's processes and their peak resident memory (the largest single process: ``ru_maxrss`` of the
children, which covers the xdist workers), plus the gate counts, which must be equal in every run.
``loadgroup`` is what ``-n N`` means under musiceval (one worker per answer source); ``load``
spreads each source's tests over the workers, each of which then builds the source itself: the
ratio between them is the grouping's effect, measured in the same run. ``-k EXPR`` runs the gates
pytest's ``-k`` selects; ``--smoke``: MiDashengLM-7B's multiple-choice gates, ``loadgroup``, 2 workers.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(workers: int, dist: str, cache: Path, results: Path, select: str | None = None) -> dict:
    return timed_pytest(["evals/", "-n", str(workers), "--dist", dist, "-q", "-p", "no:randomly",
                         *(["-k", select] if select else []),
                         "--musiceval-cache-dir", str(cache), "--musiceval-results-dir", str(results)], results)


def timed_pytest(args: list[str], results: Path, *, exit_codes: tuple[int, ...] = (0,)) -> dict:
    """Run ``python -m pytest ARGS`` in the repository as a whole child process and measure it:
    wall seconds, user + system CPU seconds of the child and every process it waited for
    (``resource.getrusage(RUSAGE_CHILDREN)`` before and after), the largest resident set among
    them (``ru_maxrss`` of this child as ``os.wait4`` reports it: this run's, not the largest of
    every earlier one), the 1-minute load average at the end, and from ``results/results.json``
    the gate counts and the verdict. An exit status outside ``exit_codes`` stops the benchmark."""
    cmd = [sys.executable, "-m", "pytest", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryFile("w+") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        stdout = out.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in exit_codes:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{stdout[-5000:]}")
    written = json.loads((results / "results.json").read_text())
    summary = re.findall(r"^=*\s*\d+ (?:failed|passed|skipped|errors?|xfailed|deselected)\b.*$", stdout, flags=re.M)
    return {"wall": wall, "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "peak_mb": usage.ru_maxrss / 1024, "load": os.getloadavg()[0], "counts": written["counts"],
            "verdict": written.get("verdict"), "summary": summary[-1] if summary else "", "stdout": stdout}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--dist", nargs="+", default=["loadgroup", "load"], choices=["loadgroup", "load"])
    ap.add_argument("-k", dest="select", default=None, metavar="EXPR", help="only the gates pytest -k EXPR selects")
    ap.add_argument("--smoke", action="store_true", help="MiDashengLM-7B's multiple-choice gates, loadgroup, 2 workers")
    args = ap.parse_args()
    if args.smoke:
        args.workers, args.dist, args.select = 2, ["loadgroup"], "MiDashengLM-7B/choice"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-evals-") as tmp:
        for repeat in range(args.repeats):
            for dist in args.dist:
                cache = Path(tmp) / f"cache-{dist}-{repeat}"
                for state in ("cold", "warm"):
                    result = run(args.workers, dist, cache, Path(tmp) / f"results-{dist}-{repeat}-{state}", args.select)
                    rows.append((dist, state, result))
                    print(f"{dist:9s} {state}: {result['wall']:.1f} s wall, {result['cpu']:.1f} CPU-s, "
                          f"peak {result['peak_mb']:.0f} MB ({result['summary']})", flush=True)
    if len({json.dumps(r["counts"], sort_keys=True) for _, _, r in rows}) != 1:
        raise SystemExit(f"gate counts differ between runs: {[r['counts'] for _, _, r in rows]}")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}; gate counts {rows[0][2]['counts']}\n")
    print(f"| dist | cache | wall s (median of {args.repeats}) | CPU s | peak MB |")
    print("|---|---|---|---|---|")
    for dist in args.dist:
        for state in ("cold", "warm"):
            picked = sorted((r for d, s, r in rows if d == dist and s == state), key=lambda r: r["wall"])
            mid = picked[len(picked) // 2]
            print(f"| {dist} | {state} | {mid['wall']:.1f} | {mid['cpu']:.1f} | {mid['peak_mb']:.0f} |")
    if len(args.dist) == 2:
        for state in ("cold", "warm"):
            walls = {d: sorted(r["wall"] for dd, s, r in rows if dd == d and s == state) for d in args.dist}
            a, b = (walls[d][len(walls[d]) // 2] for d in args.dist)
            print(f"{state}: {args.dist[1]} / {args.dist[0]} wall = {b / a:.2f}x")


if __name__ == "__main__":
    main()
