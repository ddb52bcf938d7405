"""Benchmark: all 20 prompts over 40,000 AudioSet triplets with all-MiniLM-L6-v2 (docs/protocols/text-encoders.md).

Triplets: every generated genre triplet (17,450) plus a seeded sample of instrument triplets
(22,550), so 40,000 in all; each distinct string is embedded once (no on-disk cache). Target: under
3 minutes on 2 CPU cores. Run by hand and copy the printed figures into docs/performance.md::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_triplets.py --threads 2

``--smoke``: 10 triplets on one thread (seconds, most of them loading the encoder).
"""
from __future__ import annotations

import argparse
import json
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    parser.add_argument("--n-triplets", type=int, default=40_000)
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="10 triplets, 1 thread")
    args = parser.parse_args()
    if args.smoke:
        args.n_triplets, args.threads = 10, 1

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    from musiceval.vocab.audioset import load_ontology
    from musiceval.protocols.triplets.formats import TripletSet, generate_triplets
    from musiceval.encoders import load_text_encoder
    from musiceval.protocols.triplets.engine import evaluate_triplets

    t0 = time.perf_counter()
    ontology = load_ontology()
    genre = generate_triplets(ontology.subtree("genre"))
    rest = max(args.n_triplets - len(genre), 0)
    instrument = generate_triplets(ontology.subtree("instrument"), seed=args.seed, max_triplets=rest)
    triplets = TripletSet((genre.triplets + instrument.triplets)[: args.n_triplets])
    t1 = time.perf_counter()
    encoder = load_text_encoder(args.encoder)
    t2 = time.perf_counter()
    encode_s = 0.0
    encode = encoder.encode

    def timed_encode(texts):
        nonlocal encode_s
        start = time.perf_counter()
        try:
            return encode(texts)
        finally:
            encode_s += time.perf_counter() - start

    encoder.encode = timed_encode
    cpu0 = time.process_time()
    result = evaluate_triplets(encoder, triplets, "paper")
    t3 = time.perf_counter()
    cpu_s = time.process_time() - cpu0
    mean, std = result.summary()["mean"], result.summary()["std"]
    print(json.dumps({
        "triplets": result.n, "prompts": len(result.correct), "comparisons": result.n * len(result.correct),
        "distinct_strings_encoded": getattr(encoder, "n_encoded", None), "threads": args.threads,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "generate_s": round(t1 - t0, 2), "load_encoder_s": round(t2 - t1, 2), "score_s": round(t3 - t2, 2),
        "of_which_encode_s": round(encode_s, 2), "score_cpu_s": round(cpu_s, 2),
        "total_s": round(t3 - t0, 2), "accuracy_mean": round(mean, 4), "accuracy_std": round(std, 4),
    }, indent=1))


if __name__ == "__main__":
    main()
