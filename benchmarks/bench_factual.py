"""Benchmark of the factual-QA path: rule extraction, set metrics, permutation chance, scoring.

Run by hand (figures go to docs/performance.md, section "factual")::

    .venv/bin/python benchmarks/bench_factual.py
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from musiceval.extraction import extract_labels, load_vocabulary
from musiceval.metrics.agreement import agreement_summary
from musiceval.metrics.sets import aggregate_chunks, permutation_null_f1, set_scores
from musiceval.protocols.factual.engine import factual_set, load_factual, score_factual

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "factual"


def best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    texts = [r["response"] for r in json.loads((FIXTURES / "ltu_Nsynth_instrument.jsonl").read_text())]
    texts += [r["response"] for r in json.loads((FIXTURES / "ltu_GTZAN.jsonl").read_text())]
    vocab = load_vocabulary("nsynth")
    chars = sum(map(len, texts))
    t = best_of(lambda: [extract_labels(x, vocab) for x in texts])
    print(f"rule extraction: {len(texts)} real LTU answers ({chars / len(texts):.0f} chars mean) in {t * 1e3:.1f} ms "
          f"= {t / len(texts) * 1e6:.0f} us/answer")
    long = "Blues, Hip-hop, Jazz, " * 5000
    t = best_of(lambda: extract_labels(long, load_vocabulary("gtzan")))
    print(f"rule extraction of one looping answer of {len(long)} chars: {t * 1e3:.0f} ms")

    rng = np.random.default_rng(0)
    labels = list(load_vocabulary("gtzan").labels)
    n = 10_000
    pred = [list(rng.choice(labels, size=rng.integers(0, 3), replace=False)) for _ in range(n)]
    true = [[labels[rng.integers(len(labels))]] for _ in range(n)]
    t = best_of(lambda: set_scores(pred, true))
    print(f"set_scores on {n} items: {t * 1e3:.0f} ms")
    t = best_of(lambda: permutation_null_f1(pred[:300], true[:300], n_permutations=2000), repeat=2)
    print(f"permutation_null_f1, 300 items x 2000 permutations: {t * 1e3:.0f} ms")
    t = best_of(lambda: agreement_summary(pred, true, labels))
    print(f"agreement_summary (exact set, Jaccard, kappa per label) on {n} items: {t * 1e3:.0f} ms")
    chunked = [pred[k : k + 5] for k in range(0, n, 5)]
    t = best_of(lambda: [aggregate_chunks(c, "majority") for c in chunked])
    print(f"aggregate_chunks majority, {len(chunked)} items x 5 chunks: {t * 1e3:.0f} ms")

    data = factual_set(load_factual(FIXTURES / "mullama_GTZAN.jsonl", "cmi-bench"))
    t = best_of(lambda: score_factual(data, load_vocabulary("gtzan"), n_permutations=2000), repeat=2)
    print(f"score_factual (load excluded), 290 items, correct+random+chance(2000): {t * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
