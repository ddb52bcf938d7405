"""Lexical metrics at scale: N distinct pairs x 2 conditions, the scaling curve and peak memory.

    .venv/bin/python benchmarks/bench_lexical_scale.py [--sizes 5000 25000 75000] [--reference-at 5000] [--quick] [--smoke]

Data (:mod:`benchmarks.lexical_data`): ``scale_pairs(N)`` joins two real CMI-Bench captioning
pairs into one (``response[a] + " " + response[b]`` against ``reference[a] + " " +
reference[b]``), so all N pairs are distinct and every word is real; the second condition is
the candidate of another pair (``second_condition``), as a Random condition would be.

Each size runs in a fresh child process (its own peak RSS, from ``getrusage``; with ``--workers 2`` the CPU time adds the forked
worker's and the peak is the larger of the two processes'): musiceval builds
one :class:`~musiceval.metrics.lexical_corpus.LexicalCorpus` of the references and scores both
conditions with all five metrics (tokenisation, df and WordNet look-ups included; the WordNet
load itself is reported apart). ``--reference-at`` sizes also run nltk + rouge-score +
pycocoevalcap on the same pairs and conditions, in their own child process (skipped, saying so,
where those are not installed). ``--quick``: sizes 2,000 and 6,000, reference at 2,000;
``--smoke``: sizes 50 and 100, reference at 50.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("NLTK_DATA", str(Path(sys.prefix) / "nltk_data"))

from bench_lexical import PEERS  # noqa: E402
from lexical_data import peers_installed, scale_pairs, second_condition, shared_data  # noqa: E402

METRICS = ("bleu", "bleu4", "meteor", "rouge_l", "cider")


def child(side: str, n: int, workers: int = 1) -> None:
    from musiceval.metrics.meteor import require_wordnet

    t = time.perf_counter()
    require_wordnet()
    load = time.perf_counter() - t
    cands, refs = scale_pairs(n)
    conditions = (cands, second_condition(cands))
    t, c = time.perf_counter(), time.process_time()
    means = []
    if side == "musiceval":
        from musiceval.metrics.lexical_corpus import LexicalCorpus

        corpus = LexicalCorpus(refs)
        for cond in conditions:
            out = corpus.score(cond, METRICS, workers=workers)
            means.append({m: float(out[m].mean()) for m in METRICS})
    else:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from bench_lexical import reference_side

        for cond in conditions:
            out = reference_side(cond, refs)[0]
            means.append({m: sum(out[m]) / len(out[m]) for m in METRICS})
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # forked workers, if any
    cpu += children.ru_utime + children.ru_stime
    rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, children.ru_maxrss) / 1024
    print(json.dumps({"side": side, "pairs": n, "wall_s": wall, "cpu_s": cpu, "wordnet_load_s": load,
                      "peak_rss_mb": rss, "means": means, "distinct_texts": len(set(cands) | set(refs) | set(conditions[1]))}))


def run(side: str, n: int, workers: int = 1) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", side, "--sizes", str(n), "--workers", str(workers)],
                          capture_output=True, text=True,
                          check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if proc.returncode != 0:
        raise SystemExit(f"{side} at {n} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 25000, 75000])
    parser.add_argument("--reference-at", type=int, nargs="*", default=[5000])
    parser.add_argument("--workers", type=int, default=1, help="processes scoring chunks (LexicalCorpus.score(workers=))")
    parser.add_argument("--quick", action="store_true", help="sizes 2,000 and 6,000, reference at 2,000")
    parser.add_argument("--smoke", action="store_true", help="sizes 50 and 100, reference at 50")
    parser.add_argument("--child", choices=["musiceval", "reference"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.sizes[0], args.workers)
        return
    if args.quick:
        args.sizes, args.reference_at = [2000, 6000], [2000]
    if args.smoke:
        args.sizes, args.reference_at = [50, 100], [50]
    shared_data("cmi-bench", "outputs")  # absent: exit with MISSING here, not as a failed child
    if args.reference_at and not peers_installed(*PEERS):
        args.reference_at = []
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; 2 conditions per size, 5 metrics, "
          f"{args.workers} worker process(es)")
    first = None
    for n in args.sizes:
        ours = run("musiceval", n, args.workers)
        first = first or ours
        growth = (ours["wall_s"] / first["wall_s"]) / (n / first["pairs"])
        cpu_growth = (ours["cpu_s"] / first["cpu_s"]) / (n / first["pairs"])
        line = (f"{n:6d} pairs x 2: musiceval {ours['wall_s']:7.2f} s wall {ours['cpu_s']:7.2f} s CPU, peak RSS "
                f"{ours['peak_rss_mb']:6.0f} MB, {ours['distinct_texts']} distinct texts; time per pair vs smallest {growth:.2f}x wall, {cpu_growth:.2f}x CPU")
        if n in args.reference_at:
            ref = run("reference", n)
            for a, b in zip(ours["means"], ref["means"]):
                for m in METRICS:
                    assert abs(a[m] - b[m]) < 1e-9, (n, m, a[m], b[m])
            line += (f"\n{'':14s}reference {ref['wall_s']:7.2f} s wall {ref['cpu_s']:7.2f} s CPU, peak RSS {ref['peak_rss_mb']:6.0f} MB"
                     f" -> {ref['wall_s'] / ours['wall_s']:.2f}x wall, {ref['cpu_s'] / ours['cpu_s']:.2f}x CPU; means equal")
        print(line + f"  (load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
