"""hf: on CUDA against CPU: the same greedy answers, requests/s and peak GPU memory per batch size.

    python benchmarks/bench_hf_cuda.py [--families qwen2_audio ...] [--requests 32] [--batch-size 1 8 32] [--json OUT] [--smoke]
    python benchmarks/bench_hf_cuda.py --full-size qwen2_audio [...]

``--full-size FAMILY`` hands every argument to ``benchmarks/bench_hf_cuda_fullsize.py``: the
family's published config with random weights at the real model's size (8.4 billion parameters
for Qwen2-Audio-7B), requests/s and peak GPU memory against a plain ``generate`` loop, the largest
batch that fits, shards and kill/resume through the CLI (its docstring says what it measures).

Needs a CUDA GPU (exits 2 saying so otherwise; ``--smoke``, one family, 2 requests, batch sizes 1
and 2 and 4 tokens, then runs the CPU reference row alone and says the CUDA rows are skipped).
For each family's tiny random checkpoint (built offline by musiceval.models.tiny and loaded
through ``load_model("hf:<dir>")``, the path a real checkpoint takes), ``--requests`` requests
with 2 s of 16 kHz audio each ask for ``--max-tokens`` greedy tokens:

- CPU, float32, batch size 1: the reference answers;
- CUDA, float32 and bfloat16, at each batch size; bfloat16 with ``device_map=auto`` at the
  largest.

Each row: requests/s after one warm-up batch (tiny models: this measures the adapter's overhead
per request, not a real model's compute), peak GPU memory over the timed call
(``torch.cuda.max_memory_allocated`` after a reset), the answers equal to the CPU reference and to
the same dtype at batch size 1, and the first differing pair. Greedy answers of a random tiny
model sit on near-ties between logits, so a dtype or kernel change can flip a token: the columns
say how often, and where.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from musiceval.models import GenerationSettings, Request, load_model  # noqa: E402
from musiceval.models.tiny import build_tiny  # noqa: E402

FAMILIES = ["qwen2_audio", "audioflamingo3", "musicflamingo", "glmasr", "qwen2_5_omni_thinker", "qwen3_omni_moe_thinker"]
if importlib.util.find_spec("mistral_common") is not None:
    FAMILIES.append("voxtral")


def _answers(directory: Path, requests: list[Request], settings: GenerationSettings, **load) -> dict:
    import torch

    model = load_model(f"hf:{directory}", **load)
    try:
        model.generate(requests[: load.get("batch_size", 1)], settings)  # warm-up: loads the weights, builds kernels
        cuda = torch.cuda.is_available() and not str(load.get("device", "cuda")).startswith("cpu")
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        answers = model.generate(requests, settings)
        if cuda:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else None
        dtype, device = str(model.model.dtype).removeprefix("torch."), str(model.model.device)
    finally:
        model.close()
    failed = [a.error for a in answers if not a.ok]
    return {"texts": [a.text for a in answers], "failed": failed[:3], "n_failed": len(failed),
            "requests_per_s": len(requests) / seconds, "peak_mib": peak, "dtype": dtype, "device": device}


def _same(a: list[str], b: list[str]) -> tuple[int, tuple[str, str] | None]:
    first = next(((x, y) for x, y in zip(a, b) if x != y), None)
    return sum(x == y for x, y in zip(a, b)), first


def main() -> int:
    if any(a == "--full-size" or a.startswith("--full-size=") for a in sys.argv[1:]):
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_hf_cuda_fullsize import main as full_size

        return full_size(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", nargs="+", default=FAMILIES)
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--batch-size", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--json", type=Path, default=None, help="also write every row (answers included) here")
    ap.add_argument("--smoke", action="store_true", help="qwen2_audio, 2 requests, batch sizes 1 and 2, 4 tokens; "
                    "without a GPU the CPU reference row alone")
    args = ap.parse_args()
    if args.smoke:
        args.families, args.requests, args.batch_size, args.max_tokens = ["qwen2_audio"], 2, [1, 2], 4
    import torch

    cuda = torch.cuda.is_available()
    if not cuda and not args.smoke:
        print("bench_hf_cuda: no CUDA GPU visible (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2
    if cuda:
        print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}; "
              f"TF32 matmul {torch.backends.cuda.matmul.allow_tf32}, TF32 cuDNN {torch.backends.cudnn.allow_tf32}")
    else:
        print(f"torch {torch.__version__}; no CUDA GPU visible (torch.cuda.is_available() is False): "
              "the CUDA rows are skipped, the CPU reference row alone is run")
    rng = np.random.default_rng(0)
    requests = [Request(f"i{k}", "what is the music ?", (rng.standard_normal(32_000) * 0.1).astype(np.float32))
                for k in range(args.requests)]
    settings = GenerationSettings(temperature=0.0, max_tokens=args.max_tokens, seed=0)
    rows = []
    print("| family | device | dtype | batch | requests/s | peak GPU MiB | = CPU fp32 | = same dtype at 1 | first difference (CPU / here) |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for family in args.families:
            directory = build_tiny(family, Path(tmp) / family)
            runs = [("cpu", "float32", 1, None)]
            if cuda:
                runs += [("cuda", dtype, bs, None) for dtype in ("float32", "bfloat16") for bs in args.batch_size]
                runs.append(("cuda", "bfloat16", max(args.batch_size), "auto"))
            reference, at_one = None, {}
            for device, dtype, bs, device_map in runs:
                load = {"dtype": dtype, "batch_size": bs, **({"device_map": device_map} if device_map else {"device": device})}
                if device == "cpu":
                    load["num_threads"] = 4
                got = _answers(directory, requests, settings, **load)
                reference = reference or got["texts"]
                at_one.setdefault(dtype, got["texts"])
                n_ref, diff = _same(reference, got["texts"])
                n_one, _ = _same(at_one[dtype], got["texts"])
                row = {"family": family, "device": got["device"], "device_map": device_map, "dtype": got["dtype"], "batch_size": bs,
                       **{k: got[k] for k in ("requests_per_s", "peak_mib", "n_failed", "failed")},
                       "equal_to_cpu": n_ref, "equal_to_batch_1": n_one, "n": len(requests), "first_difference": diff,
                       "texts": got["texts"]}
                rows.append(row)
                peak = "" if got["peak_mib"] is None else f"{got['peak_mib']:.0f}"
                where = f"{got['device']}{' (device_map=auto)' if device_map else ''}"
                shown = "" if diff is None else f"{diff[0][:40]!r} / {diff[1][:40]!r}"
                print(f"| {family} | {where} | {got['dtype']} | {bs} | {got['requests_per_s']:.1f} | {peak} | "
                      f"{n_ref}/{len(requests)} | {n_one}/{len(requests)} | {shown} |"
                      + (f" FAILED {got['n_failed']}: {got['failed'][:1]}" if got["n_failed"] else ""), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 1 if any(r["n_failed"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
