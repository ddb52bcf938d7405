"""Response-cache overhead: per-response cost of writing (locked, fsynced appends) and reading.

    .venv/bin/python benchmarks/bench_cache.py [--n 2000] [--batch 16] [--smoke]

Reports microseconds per response for ``put`` (one lock + fsync per response), ``put_many`` in
batches (what ``musiceval generate`` does: one lock + fsync per batch), ``get`` on a warm cache,
and opening (parsing) a cache of ``n`` lines.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from musiceval.models.cache import ResponseCache, cache_key  # noqa: E402


def records(n: int, tag: str) -> list[dict]:
    settings = {"temperature": 0.0, "max_tokens": 256, "seed": 0}
    return [{"key": cache_key(model="hf:/m", revision="r", settings=settings, prompt=f"{tag} question {i}",
                              audio_hash=f"{i:032x}", condition="correct"),
             "item_id": f"{tag}{i}", "condition": "correct", "chunk": 0, "model": "hf:/m", "revision": "r",
             "settings": settings, "prompt": f"{tag} question {i}", "audio_hash": f"{i:032x}",
             "text": "The piece is in C major, played on a solo piano at a moderate tempo. " * 3, "meta": {}}
            for i in range(n)]


def per_item_us(seconds: float, n: int) -> float:
    return seconds / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--smoke", action="store_true", help="100 responses (a second)")
    args = ap.parse_args()
    if args.smoke:
        args.n = 100
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(tmp)
        single = records(args.n // 4, "s")
        t0 = time.perf_counter()
        for r in single:
            cache.put(r)
        put_us = per_item_us(time.perf_counter() - t0, len(single))
        batched = records(args.n, "b")
        t0 = time.perf_counter()
        for i in range(0, len(batched), args.batch):
            cache.put_many(batched[i : i + args.batch])
        batch_us = per_item_us(time.perf_counter() - t0, len(batched))
        t0 = time.perf_counter()
        reopened = ResponseCache(tmp)
        open_us = per_item_us(time.perf_counter() - t0, len(single) + len(batched))
        t0 = time.perf_counter()
        for r in batched:
            assert reopened.get(r["key"]) is not None
        get_us = per_item_us(time.perf_counter() - t0, len(batched))
        size = (Path(tmp) / ResponseCache.FILENAME).stat().st_size / (len(single) + len(batched))
    print("| operation | µs per response |")
    print("|---|---|")
    print(f"| put (1 lock + fsync each) | {put_us:.0f} |")
    print(f"| put_many, batches of {args.batch} | {batch_us:.0f} |")
    print(f"| open: parse {len(single) + len(batched)} lines | {open_us:.1f} |")
    print(f"| get (warm) | {get_us:.2f} |")
    print(f"\n{size:.0f} bytes per cached response on disk")


if __name__ == "__main__":
    main()
