"""Timing of the CMI-Bench MIR protocol (run by hand; figures go to docs/performance.md).

    .venv/bin/python benchmarks/bench_mir.py [--outputs DIR] [--model mullama] [--cache DIR]
        [--encoder minilm] [--compat cmi-bench] [--bertscore-model minilm|none|DIR]

Scores every ``<model>_<task>.jsonl`` of one model (all 21 tasks that are present) through
``musiceval.scoring.mir.score_file``, as ``musiceval score mir`` does, and prints the time per
task and the total. Run it twice: the first run fills the embedding cache (tagging tasks embed
every distinct response once), the second is the warm-cache figure.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from musiceval.data.cmibench import TASKS
from musiceval.scoring.mir import score_file

DEFAULT_OUTPUTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "cmi-bench" / "outputs"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--outputs", type=Path, default=DEFAULT_OUTPUTS)
    ap.add_argument("--model", default="mullama")
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "musiceval" / "embeddings"))
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--compat", default=None, choices=[None, "cmi-bench"])
    ap.add_argument("--bertscore-model", default=None, help="captioning BERTScore model (none: skip it)")
    ap.add_argument("--tasks", default=None, help="comma-separated subset of tasks (default: all present)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    total, n_items, missing = 0.0, 0, []
    tasks = args.tasks.split(",") if args.tasks else TASKS
    for task in tasks:
        path = args.outputs / args.model / f"{args.model}_{task}.jsonl"
        if not path.is_file():
            missing.append(task)
            continue
        start = time.perf_counter()
        try:
            result, loaded = score_file(path, compat=args.compat, encoder=args.encoder, cache_dir=args.cache,
                                        bertscore_model=args.bertscore_model)
            status = ", ".join(f"{k}={v:.4f}" for k, v in result.metrics.items())
            n_items += loaded.n
        except Exception as exc:  # noqa: BLE001 - report and continue timing the rest
            status = f"{type(exc).__name__}: {str(exc)[:80]}"
        elapsed = time.perf_counter() - start
        total += elapsed
        print(f"{task:18s} {elapsed:7.2f} s  {status}", flush=True)
    print(f"total {total:.1f} s for {n_items} records ({len(tasks) - len(missing)} tasks; absent: {', '.join(missing) or 'none'})")


if __name__ == "__main__":
    main()
