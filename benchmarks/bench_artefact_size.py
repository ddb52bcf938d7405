"""The results folder a CI job keeps: its size for a whole CMI-Bench outputs folder gated against a
baseline folder, and what each compression of the per-item files would make of it.

    .venv/bin/python benchmarks/bench_artefact_size.py [--shared ../shared/data] [--keep DIR] [--tasks A,B] [--workers 4] [--smoke]

The run: LTU's 19 CMI-Bench output files (../shared/data/cmi-bench/outputs/ltu) declared as the model
under test, MU-LLaMA's as its ``[baseline]`` answers, gated with ``pytest evals/ -n 4`` in a scratch
repository (the CI file's gate command); then the sizes of what the CI would upload. The per-item files
are written xz-compressed (:func:`musiceval.report._xz`); the peers here are gzip (level 6, what
``gzip`` does by default) and no compression, applied to the same rows in the same process, with the
time each takes. Needs ../shared/data beside the repository; about 3 minutes cold on 2 cores.
``--tasks`` gates those tasks' files only, ``--workers`` sets ``-n``; ``--smoke``: GTZAN alone on 2
workers (seconds).
"""
from __future__ import annotations

import argparse
import gzip
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lexical_data import shared_data

ROOT = Path(__file__).resolve().parents[1]
CONFIG = """[[model]]
name = "ltu"
[[model.answers]]
protocol = "mir"
dir = "cmi"
[baseline]
name = "mullama"
[[baseline.answers]]
protocol = "mir"
dir = "base"
"""


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def copy_outputs(source: Path, into: Path, tasks: list[str] | None) -> None:
    """The model's output files of ``source`` (those of ``tasks`` only, when given) copied into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.glob("*.jsonl")):
        if tasks is None or path.stem.split("_", 1)[1] in tasks:
            shutil.copy(path, into / path.name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=None, help="shared/data (default: beside the repository)")
    ap.add_argument("--keep", type=Path, default=None, help="run in this folder and keep it (default: a temporary one)")
    ap.add_argument("--tasks", default=None, help="comma-separated CMI-Bench tasks (default: every file)")
    ap.add_argument("--workers", type=int, default=4, help="pytest-xdist workers of the gate run (default 4)")
    ap.add_argument("--smoke", action="store_true", help="GTZAN alone, 2 workers (seconds)")
    args = ap.parse_args()
    if args.smoke:
        args.tasks, args.workers = "GTZAN", 2
    outputs = (args.shared / "cmi-bench" / "outputs") if args.shared else shared_data("cmi-bench", "outputs")
    if not (outputs / "ltu").is_dir():
        raise SystemExit(f"{outputs}/ltu not found: pass --shared DIR (../shared/data beside the repository)")
    tasks = args.tasks.split(",") if args.tasks else None
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-artefact-"))
    copy_outputs(outputs / "ltu", work / "cmi", tasks)
    copy_outputs(outputs / "mullama", work / "base", tasks)
    (work / "evals").mkdir(exist_ok=True)
    shutil.copy(ROOT / "evals" / "test_musiceval.py", work / "evals")
    (work / "musiceval.toml").write_text(CONFIG, encoding="utf-8")
    results = work / "musiceval-results"
    shutil.rmtree(results, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; gating in {work} ...", flush=True)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "evals/", "-n", str(args.workers), "-q", "-p", "no:randomly",
                    "--junitxml=musiceval-results/junit.xml", "--musiceval-results-dir", "musiceval-results"],
                   cwd=work, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, check=False)
    print(f"gated in {time.perf_counter() - t:.0f} s")
    total = folder_bytes(results)
    print(f"{'file':<22} {'bytes':>12}")
    for path in sorted(p for p in results.rglob("*") if p.is_file() and p.parent == results):
        print(f"{path.name:<22} {path.stat().st_size:>12,}")
    print(f"{'folder (uploaded)':<22} {total:>12,}")
    print(f"\nper-item rows, {'compression':<14} {'bytes':>12} {'seconds':>8}")
    written = sum((results / n).stat().st_size for n in ("scores.jsonl.xz", "samples.jsonl.xz"))
    for name in ("scores.jsonl.xz", "samples.jsonl.xz"):
        raw = lzma.decompress((results / name).read_bytes())
        for label, compress in (("none", lambda b: b), ("gzip -6", lambda b: gzip.compress(b, 6, mtime=0)),
                                ("xz preset 2", lambda b: lzma.compress(b, preset=2))):
            t = time.perf_counter()
            size = len(compress(raw))
            print(f"{name:<16} {label:<12} {size:>12,} {time.perf_counter() - t:>8.2f}")
    print(f"\nthe folder without the per-item files: {total - written:,} bytes")
    if args.keep is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
