"""hf: batched generation vs one request at a time, on a tiny random checkpoint (CPU by default).

The checkpoint is built offline (musiceval.models.tiny) in a temporary directory and loaded
through ``load_model("hf:<dir>")``, the path a real checkpoint takes; requests carry
``--audio-seconds`` of 16 kHz audio and ask for ``--max-tokens`` greedy tokens (the tiny model
rarely stops early, so every request generates about that many).

    .venv/bin/python benchmarks/bench_hf_batch.py --family qwen2_audio --requests 16 --batch-size 1 4 16
    .venv/bin/python benchmarks/bench_hf_batch.py --smoke   # 2 requests of 0.5 s, batch sizes 1 and 2, 4 tokens

Prints one Markdown table row per batch size: requests/s and the speed-up over batch size 1,
and checks that batched answers equal one-at-a-time answers (greedy decoding, left padding).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from musiceval.models import GenerationSettings, Request, load_model  # noqa: E402
from musiceval.models.tiny import TINY_BUILDERS, build_tiny  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family", default="qwen2_audio", choices=sorted(TINY_BUILDERS))
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--batch-size", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--audio-seconds", type=float, default=2.0)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    ap.add_argument("--smoke", action="store_true", help="2 requests of 0.5 s, batch sizes 1 and 2, 4 tokens")
    args = ap.parse_args()
    if args.smoke:
        args.requests, args.batch_size, args.audio_seconds, args.max_tokens = 2, [1, 2], 0.5, 4
    rng = np.random.default_rng(0)
    requests = [Request(f"i{k}", "what is the music ?",
                        (rng.standard_normal(int(args.audio_seconds * 16_000)) * 0.1).astype(np.float32))
                for k in range(args.requests)]
    settings = GenerationSettings(max_tokens=args.max_tokens)
    with tempfile.TemporaryDirectory() as tmp:
        directory = build_tiny(args.family, Path(tmp) / args.family)
        print("| family | device | batch size | requests | requests/s | speed-up vs 1 | same answers as batch 1 |")
        print("|---|---|---|---|---|---|---|")
        reference, base = None, None
        for batch_size in args.batch_size:
            model = load_model(f"hf:{directory}", device=args.device, batch_size=batch_size, num_threads=args.threads)
            model.generate(requests[:batch_size], settings)  # warm-up
            t0 = time.perf_counter()
            answers = model.generate(requests, settings)
            rate = len(requests) / (time.perf_counter() - t0)
            model.close()
            texts = [a.text for a in answers]
            reference = reference or texts
            base = base or rate
            print(f"| {args.family} | {args.device} | {batch_size} | {len(requests)} | {rate:.1f} | {rate / base:.2f}x | "
                  f"{texts == reference} |", flush=True)


if __name__ == "__main__":
    main()
