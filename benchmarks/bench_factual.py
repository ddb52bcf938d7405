"""Benchmark of the factual-QA path: rule extraction, set metrics, permutation chance, scoring.

Run by hand (figures go to docs/performance.md, section "factual")::

    .venv/bin/python benchmarks/bench_factual.py [--smoke]

Best of 3 (of 2 for the permutation figures); ``--smoke``: one of each, 1,000 synthetic items
instead of 10,000.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from musiceval.extraction import extract_labels, load_vocabulary
from musiceval.metrics.agreement import agreement_summary
from musiceval.metrics.sets import aggregate_chunks, permutation_null_f1, set_scores
from musiceval.protocols.factual.engine import factual_set, load_factual, score_factual

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "factual"


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="each measurement once, 1,000 synthetic items (seconds)")
    repeat, n = (1, 1000) if ap.parse_args().smoke else (3, 10_000)
    texts = [r["response"] for r in json.loads((FIXTURES / "ltu_Nsynth_instrument.jsonl").read_text())]
    texts += [r["response"] for r in json.loads((FIXTURES / "ltu_GTZAN.jsonl").read_text())]
    vocab = load_vocabulary("nsynth")
    chars = sum(map(len, texts))
    t = best_of(lambda: [extract_labels(x, vocab) for x in texts], repeat)
    print(f"rule extraction: {len(texts)} real LTU answers ({chars / len(texts):.0f} chars mean) in {t * 1e3:.1f} ms "
          f"= {t / len(texts) * 1e6:.0f} us/answer")
    long = "Blues, Hip-hop, Jazz, " * 5000
    t = best_of(lambda: extract_labels(long, load_vocabulary("gtzan")), repeat)
    print(f"rule extraction of one looping answer of {len(long)} chars: {t * 1e3:.0f} ms")

    rng = np.random.default_rng(0)
    labels = list(load_vocabulary("gtzan").labels)
    pred = [list(rng.choice(labels, size=rng.integers(0, 3), replace=False)) for _ in range(n)]
    true = [[labels[rng.integers(len(labels))]] for _ in range(n)]
    t = best_of(lambda: set_scores(pred, true), repeat)
    print(f"set_scores on {n} items: {t * 1e3:.0f} ms")
    t = best_of(lambda: permutation_null_f1(pred[:300], true[:300], n_permutations=2000), min(repeat, 2))
    print(f"permutation_null_f1, 300 items x 2000 permutations: {t * 1e3:.0f} ms")
    t = best_of(lambda: agreement_summary(pred, true, labels), repeat)
    print(f"agreement_summary (exact set, Jaccard, kappa per label) on {n} items: {t * 1e3:.0f} ms")
    chunked = [pred[k : k + 5] for k in range(0, n, 5)]
    t = best_of(lambda: [aggregate_chunks(c, "majority") for c in chunked], repeat)
    print(f"aggregate_chunks majority, {len(chunked)} items x 5 chunks: {t * 1e3:.0f} ms")

    data = factual_set(load_factual(FIXTURES / "mullama_GTZAN.jsonl", "cmi-bench"))
    t = best_of(lambda: score_factual(data, load_vocabulary("gtzan"), n_permutations=2000), min(repeat, 2))
    print(f"score_factual (load excluded), 290 items, correct+random+chance(2000): {t * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
