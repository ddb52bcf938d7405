"""Calibration under skew: false-PASS rates of every gate type on true nulls, per data shape.

The long version of tests/test_calibration.py: ``--sims`` null data sets (default 2,000) per
(gate, shape) of :data:`musiceval.calibration.GRID`, decided by the calibrated gates
(``ci_method="auto"``) and, for comparison, by the BCa bootstrap the gates used before
(``--methods auto,bca``; BCa is ~100x slower: give it ``--kinds paired_greater`` and a few shapes).
Nominal false-PASS rate: alpha/2 = 2.5 % (lower bound of a two-sided 95 % interval above the bar).
Prints a markdown table with the Monte-Carlo SE and the limit nominal + 2 SE.

    .venv/bin/python benchmarks/bench_calibration.py [--sims 2000] [--methods auto] \\
        [--kinds paired_greater,...] [--shapes "zero-inflated left,clustered left"] [--resamples 2000]
"""
from __future__ import annotations

import argparse
import math
import time

from musiceval.calibration import GATE_KINDS, GRID, MARGINS, false_pass_rate, grid_cases, tolerance
from musiceval.gates import Gate, GateConfig

NOMINAL = 0.025


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--methods", default="auto", help="comma-separated: auto, bca, percentile")
    ap.add_argument("--kinds", default=",".join(GATE_KINDS))
    ap.add_argument("--shapes", default=",".join(GRID), help="comma-separated shape labels of the grid")
    ap.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples of bca / percentile")
    args = ap.parse_args()
    kinds, shapes = set(args.kinds.split(",")), set(args.shapes.split(","))
    unknown = shapes - set(GRID)
    if unknown:
        raise SystemExit(f"unknown shapes {sorted(unknown)}; the grid has: {', '.join(GRID)}")
    se = math.sqrt(NOMINAL * (1 - NOMINAL) / args.sims)
    print(f"{args.sims} null simulations per row; nominal {NOMINAL:.1%}, Monte-Carlo SE {se:.2%}, "
          f"limit {tolerance(NOMINAL, args.sims):.2%} (nominal + 2 SE)\n")
    print("| gate | shape | method | false PASS | within limit | seconds |")
    print("|---|---|---|---|---|---|")
    for method in args.methods.split(","):
        gate = Gate(GateConfig(ci_method=method, n_resamples=args.resamples))
        for k, (kind, label, shape) in enumerate(grid_cases()):
            if kind not in kinds or label not in shapes:
                continue
            t0 = time.perf_counter()
            rate = false_pass_rate(gate, kind, shape, n_sims=args.sims, seed=10_000 + k, margin=MARGINS.get(kind, 0.02))
            ok = "yes" if rate <= tolerance(NOMINAL, args.sims) else "**no**"
            print(f"| {kind} | {label} | {method} | {rate:.2%} | {ok} | {time.perf_counter() - t0:.1f} |", flush=True)


if __name__ == "__main__":
    main()
