"""Random condition at scale: 75,000 items whose questions share tracks, one prompt.

    .venv/bin/python benchmarks/bench_conditions.py [--items 75000] [--per-track 7] [--repeats 3] [--quick] [--smoke]

Times :func:`musiceval.conditions.random_recorded_responses` with ``clips`` (no item may get a
response recorded on its own track) and checks the result: every item paired, a permutation,
no partner on the same track, and the same pairing when the input is shuffled. The previous
rejection sampler stopped after 100,000 draws on such a file; the constructive derangement has
no failure mode when a pairing exists.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from musiceval.conditions import random_recorded_responses  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=75_000)
    parser.add_argument("--per-track", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="10,000 items, 1 repeat")
    parser.add_argument("--smoke", action="store_true", help="2,000 items, 1 repeat (a second)")
    args = parser.parse_args()
    if args.quick:
        args.items, args.repeats = 10_000, 1
    if args.smoke:
        args.items, args.repeats = 2000, 1
    n = args.items
    ids = [f"id{k:07d}" for k in range(n)]
    clips = [f"track{k // args.per_track}" for k in range(n)]
    prompts = ["Describe the music in detail."] * n
    times = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        rr = random_recorded_responses(ids, prompts, list(range(n)), seed=0, clips=clips)
        times.append(time.perf_counter() - t)
    partner = [rr.draws[0][i] for i in ids]
    assert not rr.unpaired and sorted(partner) == list(range(n))
    assert all(clips[p] != clips[k] for k, p in enumerate(partner))
    order = list(range(n))
    random.Random(0).shuffle(order)
    shuffled = random_recorded_responses([ids[k] for k in order], prompts, list(order), seed=0,
                                         clips=[clips[k] for k in order])
    assert shuffled.draws[0] == rr.draws[0]  # response k belongs to item k in both runs
    print(f"{n} items, {args.per_track} per track, one prompt: {statistics.median(times):.2f} s "
          f"(median of {args.repeats}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores); "
          f"all paired, none with its own track, identical on shuffled input")


if __name__ == "__main__":
    main()
