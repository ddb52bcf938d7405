"""An encoder's batches on two threads: torch's own threading against batches side by side.

    .venv/bin/python benchmarks/bench_batch_threads.py [--n 1600] [--threads 2] [--smoke]

The bundled all-MiniLM-L6-v2 (BERTScore's model in the default free-form set) embeds the first
``--n`` distinct real captions (``lexical_data.real_pairs``: responses, then references) in
batches of similar token counts (``length_batches``, 64 texts and 4,096 padded tokens at most),
through bert-score's own ``bert_encode``, four ways, each in a fresh child process:

- ``one``: one torch thread (the CPU-time baseline);
- ``spinning``: torch's ``--threads`` threads splitting each operator, idle threads spinning
  (OpenMP's default wait policy);
- ``sleeping``: the same with ``OMP_WAIT_POLICY=PASSIVE``;
- ``side by side``: ``musiceval.encoders.batches.map_batches``, ``--threads`` batches at once,
  each operator on one thread.

Reported: wall and CPU seconds of the timed pass (after one untimed pass that warms the
allocator), speed-up over ``one``, and whether every embedding equals ``one``'s bit for bit.
``--smoke``: 64 captions (seconds).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

MODES = ("one", "spinning", "sleeping", "side by side")


def child(mode: str, n: int, threads: int, out: str) -> None:
    import numpy as np
    import torch
    from bert_score import BERTScorer
    from bert_score.utils import bert_encode, sent_encode

    from lexical_data import real_pairs
    from musiceval.encoders.batches import length_batches, map_batches
    from musiceval.encoders.bertscore_cache import padded_ids
    from musiceval.encoders.sentence import bundled_minilm_path

    responses, references = real_pairs()
    texts = list(dict.fromkeys(responses + references))[:n]
    scorer = BERTScorer(model_type=bundled_minilm_path(), num_layers=6, device="cpu")
    tok, model = scorer._tokenizer, scorer._model
    ids = [sent_encode(tok, t) for t in texts]
    batches = length_batches([len(t) for t in ids], max_texts=64, max_tokens=64 * 64)

    def forward(idx: list[int]) -> np.ndarray:
        x, mask = padded_ids([ids[i] for i in idx], tok.pad_token_id)
        return bert_encode(model, x, attention_mask=mask)[mask.bool()].numpy()

    torch.set_num_threads(1 if mode == "one" else threads)
    if mode == "side by side":
        def embed() -> list:
            return list(map_batches(forward, batches))
    else:
        def embed() -> list:
            with torch.inference_mode():
                return [forward(b) for b in batches]
    embed()  # warms the allocator and oneDNN's primitive cache
    wall, cpu = time.perf_counter(), time.process_time()
    rows = embed()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    np.save(out, np.concatenate(rows))
    print(json.dumps({"mode": mode, "texts": len(texts), "tokens": int(sum(map(len, ids))), "wall": wall, "cpu": cpu}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1600, help="distinct captions (default 1,600)")
    ap.add_argument("--threads", type=int, default=2, help="threads of the three threaded modes (default 2)")
    ap.add_argument("--smoke", action="store_true", help="64 captions")
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.smoke:
        args.n = 64
    if args.child:
        child(args.child, args.n, args.threads, args.out)
        return 0
    import numpy as np

    import tempfile

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; all-MiniLM-L6-v2, {args.n} captions, "
          f"{args.threads} threads")
    print("| mode | wall s | CPU s | speed-up (wall) | = one thread, bit for bit |")
    print("|---|---:|---:|---:|---|")
    base = None
    with tempfile.TemporaryDirectory(prefix="bench-batch-threads-") as tmp:
        first = None
        for mode in MODES:
            out = str(Path(tmp) / f"{mode.replace(' ', '_')}.npy")
            env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
            env.pop("OMP_WAIT_POLICY", None)
            env.pop("OMP_NUM_THREADS", None)
            if mode == "sleeping":
                env["OMP_WAIT_POLICY"] = "PASSIVE"
            proc = subprocess.run([sys.executable, __file__, "--child", mode, "--n", str(args.n), "--threads",
                                   str(args.threads), "--out", out], capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                print(proc.stderr[-3000:], file=sys.stderr)
                return proc.returncode
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            rows = np.load(out)
            first = rows if first is None else first
            base = base or got["wall"]
            same = "yes" if rows.shape == first.shape and np.array_equal(rows, first) else \
                f"no (max difference {float(np.abs(rows - first).max()):.1e})"
            print(f"| {mode} | {got['wall']:.2f} | {got['cpu']:.2f} | {base / got['wall']:.2f}x | {same} |", flush=True)
    print(f"(load average {os.getloadavg()[0]:.1f} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
