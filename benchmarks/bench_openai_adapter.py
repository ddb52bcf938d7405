"""Throughput of the openai-compatible adapter against a local server (requests/s by concurrency).

The server (musiceval/llm/fake_server.py) runs in its own process on 127.0.0.1 and answers
after ``--latency`` seconds (0 = at once; a few tens of ms imitates a GPU server's per-request
time). Each request carries ``--audio-seconds`` of 16 kHz audio as base64 WAV, like a real run.

    .venv/bin/python benchmarks/bench_openai_adapter.py --latency 0 --latency 0.05
    .venv/bin/python benchmarks/bench_openai_adapter.py --latency 0.2 --concurrency 1 4 16 32 64 --rounds 4
    .venv/bin/python benchmarks/bench_openai_adapter.py --latency 0.2 --replicas 2 --concurrency 16 32
    .venv/bin/python benchmarks/bench_openai_adapter.py --smoke   # latency 0, concurrency 1 and 2, 4 requests

Prints one Markdown table row per (latency, concurrency), then the peak resident memory of the
client and of the largest server process: requests/s, the speed-up over the
first level's per-slot rate, and the efficiency: requests/s over the latency bound
(slots / latency, 1.0 = linear scaling) when the server has a latency. ``--rounds R`` sends
``R * concurrency`` requests per level (default: as before); ``--replicas K`` starts K servers and
balances over them (``concurrency`` is then per replica). Scaling is near linear while the server keeps up (latency-bound); with an
instant Python server it saturates once the client and server share the CPU.
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from musiceval.models import GenerationSettings, Request, load_model  # noqa: E402


def measure(base_url: str, concurrency: int, n: int, audio: np.ndarray | None) -> float:
    model = load_model(f"openai-compatible:{base_url}#echo", concurrency=concurrency, timeout=60, max_retries=0)
    requests = [Request(f"i{k}", f"question {k}", audio) for k in range(n)]
    model.generate(requests[: min(n, concurrency)], GenerationSettings())  # warm-up
    t0 = time.perf_counter()
    answers = model.generate(requests, GenerationSettings())
    elapsed = time.perf_counter() - t0
    failed = [a.error for a in answers if not a.ok]
    if failed:
        raise SystemExit(f"{len(failed)} requests failed, first: {failed[0]}")
    model.close()
    return n / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--latency", type=float, action="append", help="server latency in seconds (repeatable)")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--requests", type=int, default=256)
    ap.add_argument("--audio-seconds", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=None, help="requests per level = rounds * concurrency * replicas")
    ap.add_argument("--replicas", type=int, default=1, help="local servers to balance over (default 1)")
    ap.add_argument("--smoke", action="store_true", help="latency 0, concurrency 1 and 2, 4 requests of 0.1 s audio")
    args = ap.parse_args()
    if args.smoke:
        args.latency, args.concurrency, args.requests, args.audio_seconds = [0.0], [1, 2], 4, 0.1
    audio = (np.random.default_rng(0).standard_normal(int(args.audio_seconds * 16_000)) * 0.1).astype(np.float32)
    print("| server latency | replicas | concurrency | requests | requests/s | speed-up vs 1 slot | efficiency |")
    print("|---|---|---|---|---|---|---|")
    for latency in args.latency or [0.0, 0.05]:
        servers = [subprocess.Popen([sys.executable, "-m", "musiceval.llm.fake_server", "--latency", str(latency),
                                     "--max-seconds", "600"], stdout=subprocess.PIPE, text=True)
                   for _ in range(max(1, args.replicas))]
        try:
            base_url = ",".join(f"http://127.0.0.1:{int(s.stdout.readline())}/v1" for s in servers)
            base = None
            for c in args.concurrency:
                if args.rounds:
                    n = args.rounds * c * len(servers)
                else:
                    n = args.requests if latency == 0 else min(args.requests, max(32, int(c * 2 / max(latency, 1e-3))))
                rate = measure(base_url, c, n, audio)
                base = base or rate / (c * len(servers))  # per-slot rate of the first level
                # efficiency: against the latency bound (slots / latency) when the server has a latency,
                # else against linear scaling of the first level
                ideal = c * len(servers) / latency if latency > 0 else base * c * len(servers)
                print(f"| {latency * 1000:.0f} ms | {len(servers)} | {c} | {n} | {rate:.1f} | "
                      f"{rate / base / (c * len(servers)) * c * len(servers):.2f}x | {rate / ideal:.2f} |", flush=True)
        finally:
            for s in servers:
                s.kill()
                s.wait()
    print(f"\npeak RSS: client (this process) {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB, "
          f"largest server {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
