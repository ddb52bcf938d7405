"""Calibration under skew: false-PASS rates of every gate type on true nulls, per data shape.

The long version of tests/test_calibration.py: ``--sims`` null data sets (default 2,000) per
(gate, shape) of :data:`musiceval.stats.calibration.GRID`, decided by the calibrated gates
(``ci_method="auto"``) and, for comparison, by the BCa bootstrap the gates used before
(``--methods auto,bca``; BCa is ~100x slower: give it ``--kinds paired_greater`` and a few shapes).
Nominal false-PASS rate: alpha/2 = 2.5 % (lower bound of a two-sided 95 % interval above the bar).
Prints a markdown table with the Monte-Carlo SE and the limit nominal + 2 SE.

    .venv/bin/python benchmarks/bench_calibration.py [--sims 2000] [--methods auto] \\
        [--kinds paired_greater,...] [--shapes "zero-inflated left,clustered left"] [--resamples 2000]

With ``--blind``: answer-blind files instead (:mod:`musiceval.calibration.blind`): for each
simulated benchmark (uniform and skewed keys; MTG-instrument-like tagging) and
answer-blind strategy (constant, best constant, prior-matched, shifted; for tagging the most common
response, the tag-frequency ranking, prior-matched tags and shifted answers), the false-PASS rate of
the one chance gate ("beats the strongest answer-blind strategy") and of "the model listens", and
of the file as a whole (both PASS: what a release needs).

    .venv/bin/python benchmarks/bench_calibration.py --blind [--sims 2000] [--jobs 2]

With ``--questions``: "the model answers the question" (:mod:`musiceval.calibration.questions`): for
each simulated benchmark with several questions per clip (MuChoMusic-like and MusicQA-like multiple
choice, uniform and skewed keys; MusicQA-like free-form scored by ROUGE-L) and strategy, the share of
files on which the gate PASSes, FAILs or is INCONCLUSIVE. A true null (``clip-only``: answers that
follow the clip, not the question) and the shifted files must PASS at most nominal + 2 SE; the
``listens and answers`` row is the gate's power.

    .venv/bin/python benchmarks/bench_calibration.py --questions [--sims 2000] [--jobs 2]

With ``--few-clusters``: the paired gates on few clusters (:data:`musiceval.stats.calibration.FEW_CLUSTER_GRID`,
decided by the cluster sign-flip test), then the table that chose
:data:`musiceval.stats.intervals.SIGN_FLIP_CLUSTERS`: by number of clusters, the false-PASS rate, power
5 points above the bar and median width of the CR1 path (the skew-corrected t on cluster units, what the gates
used before) and of the sign-flip test at alpha/2 (the rule) and at alpha, on the grid's shapes and the harsher
:data:`musiceval.stats.calibration.FEW_CLUSTER_LIMITS` (docs/regression-gates.md, "Few clusters").

    .venv/bin/python benchmarks/bench_calibration.py --few-clusters [--sims 2000] [--jobs 2]

``--smoke`` (with any of the modes): 20 simulations per row, seconds for the default mode.
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
    ap.add_argument("--jobs", type=int, default=1, help="--blind: rows computed in this many processes")
    ap.add_argument("--questions", action="store_true", help="'the model answers the question' on files that do not")
    ap.add_argument("--few-clusters", action="store_true", help="paired gates on few clusters; CR1 vs sign-flip by cluster count")
    ap.add_argument("--smoke", action="store_true", help="20 simulations per row")
    args = ap.parse_args()
    if args.smoke:
        args.sims = 20
    if args.few_clusters:
        return few_clusters(args.sims, jobs=args.jobs)
    if args.questions:
        return questions(args.sims, jobs=args.jobs)
    if args.blind:
        return blind(args.sims, jobs=args.jobs)
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


def _blind_row(bench, strategy: str, sims: int, seed: int) -> tuple[dict[str, float], float]:
    from musiceval.calibration.blind import false_pass_rates

    t0 = time.perf_counter()
    rates = false_pass_rates(bench, strategy, n_sims=sims, seed=seed)
    return rates, time.perf_counter() - t0


def blind(sims: int, jobs: int = 1) -> None:
    from concurrent.futures import ProcessPoolExecutor

    from musiceval.calibration.blind import BENCHMARKS

    limit = tolerance(NOMINAL, sims)
    print(f"{sims} answer-blind files per row; nominal false PASS of one gate {NOMINAL:.1%}, limit {limit:.2%} "
          "(nominal + 2 SE); a file passes when every gate PASSes\n")
    print("| benchmark | strategy | false PASS per gate | file passes | every gate within limit | seconds |")
    print("|---|---|---|---|---|---|")
    rows = [(bench, strategy, 20_000 + 100 * k + j) for k, bench in enumerate(BENCHMARKS)
            for j, strategy in enumerate(bench.strategies)]
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(_blind_row, bench, strategy, sims, seed) for bench, strategy, seed in rows]
        for (bench, strategy, _), future in zip(rows, futures):
            rates, seconds = future.result()
            whole = rates.pop("all gates")
            per_gate = ", ".join(f"{name} {rate:.1%}" for name, rate in rates.items()) or "none"
            ok = max(rates.values(), default=0.0) <= limit
            print(f"| {bench.label} | {strategy} | {per_gate} | {whole:.2%} | {'yes' if ok else '**no**'} "
                  f"| {seconds:.0f} |", flush=True)


def _questions_row(bench, strategy: str, sims: int, seed: int) -> tuple[dict[str, float], float]:
    from musiceval.calibration.questions import outcome_rates

    t0 = time.perf_counter()
    rates = outcome_rates(bench, strategy, n_sims=sims, seed=seed)
    return rates, time.perf_counter() - t0


def questions(sims: int, jobs: int = 1) -> None:
    """The table of docs/regression-gates.md, "Answering the question"."""
    from concurrent.futures import ProcessPoolExecutor

    from musiceval.calibration.questions import BENCHMARKS, NULLS, STRATEGIES

    limit = tolerance(NOMINAL, sims)
    print(f"{sims} files per row; the gate \"answers the question\" on each; nominal false PASS {NOMINAL:.1%}, "
          f"limit {limit:.2%} (nominal + 2 SE) for the files that do not answer the question\n")
    print("| benchmark | strategy | PASS | FAIL | INCONCLUSIVE | within limit | seconds |")
    print("|---|---|---|---|---|---|---|")
    rows = [(bench, strategy, 30_000 + 100 * k + j) for k, bench in enumerate(BENCHMARKS)
            for j, strategy in enumerate(STRATEGIES)]
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(_questions_row, bench, strategy, sims, seed) for bench, strategy, seed in rows]
        for (bench, strategy, _), future in zip(rows, futures):
            rates, seconds = future.result()
            ok = ("yes" if rates["PASS"] <= limit else "**no**") if strategy in NULLS else "(power)"
            print(f"| {bench.label} | {strategy} | {rates['PASS']:.2%} | {rates['FAIL']:.1%} | "
                  f"{rates['INCONCLUSIVE']:.1%} | {ok} | {seconds:.0f} |", flush=True)


def _few_cluster_row(kind: str, shape, sims: int, seed: int) -> tuple[float, float]:
    from musiceval.stats.calibration import MARGINS, false_pass_rate

    t0 = time.perf_counter()
    rate = false_pass_rate(Gate(GateConfig()), kind, shape, n_sims=sims, seed=seed, margin=MARGINS.get(kind, 0.02))
    return rate, time.perf_counter() - t0


#: cluster counts and shapes of the threshold table (``--few-clusters``)
THRESHOLD_CLUSTERS = (5, 8, 10, 15, 20, 25, 30)


def _threshold_shapes() -> dict[str, object]:
    from musiceval.stats.calibration import FEW_CLUSTER_LIMITS, Shape

    return {
        "binary (beta cluster effects)": Shape("binary", sizes=(5, 17)),
        "binary two-point": Shape("binary", sizes=(5, 17), effect="two-point", discordant=0.45),
        "normal, values in [0, 1]": Shape("clustered", sigma=0.01, scale=0.1, sizes=(5, 17)),
        "clustered left (sigma 0.25)": Shape("clustered", sigma=0.25, sign=-1, sizes=(5, 17)),
        **FEW_CLUSTER_LIMITS,
    }


def _threshold_row(label: str, shape, sims: int, seed: int) -> tuple[str, list[str]]:
    """One row of the threshold table: ``paired_interval`` as before this rule (CR1 units), the
    sign-flip at alpha/2 (the rule) and at alpha, on the same simulated data sets (bar +2 points;
    power: true difference +7 points, 5 above the bar)."""
    import numpy as np

    from musiceval.stats import calibration, intervals

    bar, cells = 0.02, []
    for method in ("CR1", "sign-flip", "sign-flip at alpha"):
        rates = []
        for effect, n in ((0.0, sims), (0.05, max(1, sims // 4))):
            rng = np.random.default_rng(seed)
            passes, widths = 0, []
            for _ in range(n):
                if shape.kind == "binary":
                    new, old, groups = calibration._binary_clustered_pair(rng, shape, bar + effect)
                else:
                    d, groups = calibration._differences(rng, shape, bar + effect)
                    old = np.full(d.size, 0.5)
                    new = old + d
                if method == "CR1":
                    saved, intervals.SIGN_FLIP_CLUSTERS = intervals.SIGN_FLIP_CLUSTERS, 0  # the path before the rule
                    try:
                        b = intervals.paired_interval(new, old, groups=groups, margin=bar)
                    finally:
                        intervals.SIGN_FLIP_CLUSTERS = saved
                else:
                    b = intervals.cluster_sign_flip(new - old, groups, alpha=0.025 if method == "sign-flip" else 0.05,
                                                    margin=bar)
                passes += b.low > bar
                widths.append(min(b.high, 1.0) - max(b.low, -1.0))
            rates.append((passes / n, float(np.median(widths))))
        (fp, _), (power, width) = rates
        cells.append(f"{fp:.2%} / {power:.0%} / {width:.3f}")
    return label, cells


def few_clusters(sims: int, jobs: int = 1) -> None:
    """The few-cluster tables of docs/regression-gates.md, "Few clusters"."""
    from concurrent.futures import ProcessPoolExecutor
    from dataclasses import replace

    from musiceval.stats.calibration import few_cluster_cases

    limit = tolerance(NOMINAL, sims)
    print(f"{sims} null simulations per row; nominal {NOMINAL:.1%}, limit {limit:.2%} (nominal + 2 SE)\n")
    print("| gate | shape | false PASS | within limit | seconds |")
    print("|---|---|---|---|---|")
    cases = few_cluster_cases()
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(_few_cluster_row, kind, shape, sims, 40_000 + k) for k, (kind, _, shape) in enumerate(cases)]
        for (kind, label, _), future in zip(cases, futures):
            rate, seconds = future.result()
            print(f"| {kind} | {label} | {rate:.2%} | {'yes' if rate <= limit else '**no**'} | {seconds:.1f} |", flush=True)
    print(f"\nfalse PASS ({sims} null data sets, bar +2 points) / power at +7 points, 5 above the bar ({max(1, sims // 4)} data sets) / "
          "median width of the 95 % interval; paired_interval before this rule (CR1), the sign-flip at alpha/2 (the rule) "
          "and at alpha\n")
    print("| shape | clusters | CR1 | sign-flip at alpha/2 | sign-flip at alpha |")
    print("|---|---|---|---|---|")
    rows = [(label, c, replace(shape, clusters=c)) for label, shape in _threshold_shapes().items() for c in THRESHOLD_CLUSTERS]
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(_threshold_row, label, shape, sims, 50_000 + k) for k, (label, _, shape) in enumerate(rows)]
        for (label, c, _), future in zip(rows, futures):
            _, cells = future.result()
            print(f"| {label} | {c} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
