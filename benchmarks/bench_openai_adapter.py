"""Throughput of the openai-compatible adapter against a local server (requests/s by concurrency).

The server (musiceval/llm/fake_server.py) runs in its own process on 127.0.0.1 and answers
after ``--latency`` seconds (0 = at once; a few tens of ms imitates a GPU server's per-request
time). Each request carries ``--audio-seconds`` of 16 kHz audio as base64 WAV, like a real run.

    .venv/bin/python benchmarks/bench_openai_adapter.py --latency 0 --latency 0.05

Prints one Markdown table row per (latency, concurrency): requests/s and the speed-up over
concurrency 1. Scaling is near linear while the server keeps up (latency-bound); with an
instant Python server it saturates once the client and server share the CPU.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from musiceval.models import GenerationSettings, Request, load_model  # noqa: E402


def measure(base_url: str, concurrency: int, n: int, audio: np.ndarray | None) -> float:
    model = load_model(f"openai-compatible:{base_url}#echo", concurrency=concurrency, timeout=30, max_retries=0)
    requests = [Request(f"i{k}", f"question {k}", audio) for k in range(n)]
    model.generate(requests[: min(n, concurrency)], GenerationSettings())  # warm-up
    t0 = time.perf_counter()
    answers = model.generate(requests, GenerationSettings())
    elapsed = time.perf_counter() - t0
    failed = [a.error for a in answers if not a.ok]
    if failed:
        raise SystemExit(f"{len(failed)} requests failed, first: {failed[0]}")
    return n / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--latency", type=float, action="append", help="server latency in seconds (repeatable)")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--requests", type=int, default=256)
    ap.add_argument("--audio-seconds", type=float, default=1.0)
    args = ap.parse_args()
    audio = (np.random.default_rng(0).standard_normal(int(args.audio_seconds * 16_000)) * 0.1).astype(np.float32)
    print("| server latency | concurrency | requests/s | speed-up vs 1 |")
    print("|---|---|---|---|")
    for latency in args.latency or [0.0, 0.05]:
        server = subprocess.Popen([sys.executable, "-m", "musiceval.llm.fake_server",
                                   "--latency", str(latency), "--max-seconds", "600"], stdout=subprocess.PIPE, text=True)
        try:
            base_url = f"http://127.0.0.1:{int(server.stdout.readline())}/v1"
            base = None
            for c in args.concurrency:
                n = args.requests if latency == 0 else min(args.requests, max(32, int(c * 2 / max(latency, 1e-3))))
                rate = measure(base_url, c, n, audio)
                base = base or rate
                print(f"| {latency * 1000:.0f} ms | {c} | {rate:.1f} | {rate / base:.2f}x |", flush=True)
        finally:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
