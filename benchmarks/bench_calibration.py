"""Calibration under skew: false-PASS rates of every gate type on true nulls, per data shape.

The long version of tests/test_calibration.py: ``--sims`` null data sets (default 2,000) per
(gate, shape) of :data:`musiceval.stats.calibration.GRID`, decided by the calibrated gates
(``ci_method="auto"``) and, for comparison, by the BCa bootstrap the gates used before
(``--methods auto,bca``; BCa is ~100x slower: give it ``--kinds paired_greater`` and a few shapes).
Nominal false-PASS rate: alpha/2 = 2.5 % (lower bound of a two-sided 95 % interval above the bar).
Prints a markdown table with the Monte-Carlo SE and the limit nominal + 2 SE.

    .venv/bin/python benchmarks/bench_calibration.py [--sims 2000] [--methods auto] \\
        [--kinds paired_greater,...] [--shapes "zero-inflated left,clustered left"] [--resamples 2000]

With ``--blind``: answer-blind files instead (:mod:`musiceval.calibration_blind`): for each
simulated benchmark (uniform and skewed keys) and answer-blind strategy (constant, best constant,
prior-matched, shifted), the false-PASS rate of every beats-chance and listens gate of the protocol,
and of the file as a whole (every gate PASS: what a release needs).

    .venv/bin/python benchmarks/bench_calibration.py --blind [--sims 2000]
"""
from __future__ import annotations

import argparse
import math
import time

from musiceval.stats.calibration import GATE_KINDS, GRID, MARGINS, false_pass_rate, grid_cases, tolerance
from musiceval.gates import Gate, GateConfig

NOMINAL = 0.025


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--methods", default="auto", help="comma-separated: auto, bca, percentile")
    ap.add_argument("--kinds", default=",".join(GATE_KINDS))
    ap.add_argument("--shapes", default=",".join(GRID), help="comma-separated shape labels of the grid")
    ap.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples of bca / percentile")
    ap.add_argument("--blind", action="store_true", help="answer-blind files through every protocol's gates")
    args = ap.parse_args()
    if args.blind:
        return blind(args.sims)
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


def blind(sims: int) -> None:
    from musiceval.calibration_blind import BENCHMARKS, STRATEGIES, false_pass_rates

    limit = tolerance(NOMINAL, sims)
    print(f"{sims} answer-blind files per row; nominal false PASS of one gate {NOMINAL:.1%}, limit {limit:.2%} "
          "(nominal + 2 SE); a file passes when every gate PASSes\n")
    print("| benchmark | strategy | false PASS per gate | file passes | within limit | seconds |")
    print("|---|---|---|---|---|---|")
    for k, bench in enumerate(BENCHMARKS):
        for j, strategy in enumerate(STRATEGIES):
            t0 = time.perf_counter()
            rates = false_pass_rates(bench, strategy, n_sims=sims, seed=20_000 + 100 * k + j)
            whole = rates.pop("all gates")
            per_gate = ", ".join(f"{name} {rate:.1%}" for name, rate in rates.items()) or "none"
            print(f"| {bench.label} | {strategy} | {per_gate} | {whole:.2%} | {'yes' if whole <= limit else '**no**'} "
                  f"| {time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
