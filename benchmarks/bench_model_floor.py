"""The least time any float32 implementation needs to embed N free-form pairs' texts on this machine.

    .venv/bin/python benchmarks/bench_model_floor.py [--n 20000]

The default free-form set's two embedding metrics (BERTScore on all-MiniLM-L6-v2's layer 6 and
the sentence cosine) need every distinct text through the bundled MiniLM once: musiceval already
embeds each distinct text once for both (bench_freeform_scale.py). This script bounds what is
left from below, by arithmetic on measured figures:

- the texts: those of ``bench_freeform_scale.py --n N`` (``lexical_data.scale_pairs``; Random
  reuses Correct's candidates, so the distinct texts are the N candidates and N references), and
  the same count of single real captions (``lexical_data.real_pairs``, cycled) for a user whose
  answers are one caption long;
- the tokens: the bundled tokenizer's, truncated as BERTScore truncates (the model's 512);
- the multiply-adds per token: the model's own config (Q, K, V, output, two feed-forward
  matrices per layer, plus attention's two products over the text's length), counted as 2 FLOP each;
- the machine's ceiling: torch's float32 matrix product at the model's own shapes (2,048 tokens x
  hidden x intermediate) on all threads, best of 30 after 3 warm-ups (the most generous figure).

Floor = FLOP / ceiling: what a perfect implementation with no tokenising, attention softmax,
layer norms, greedy matching, lexical metrics or model load would still need. Anything under it
needs fewer FLOP (a smaller or quantised model) or a faster chip, both of which change the values.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def gemm_ceiling(hidden: int, intermediate: int, tokens: int = 2048) -> float:
    """Best float32 FLOP/s of ``(tokens x hidden) @ (hidden x intermediate)`` on torch's threads."""
    import torch

    a, b = torch.randn(tokens, hidden), torch.randn(hidden, intermediate)
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(30):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * tokens * hidden * intermediate / best


def flop_per_text(n_tokens: int, hidden: int, intermediate: int, layers: int) -> int:
    """Forward FLOP of one text through a BERT encoder: per layer and token, the four attention
    projections and the two feed-forward matrices, plus QK^T and the weighted sum over the text."""
    per_token_layer = 2 * (4 * hidden * hidden + 2 * hidden * intermediate) + 2 * 2 * n_tokens * hidden
    return layers * n_tokens * per_token_layer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000, help="distinct pairs (default 20,000)")
    args = ap.parse_args()

    import torch
    from lexical_data import real_pairs, scale_pairs
    from transformers import AutoConfig, AutoTokenizer

    from musiceval.encoders.sentence import bundled_minilm_path

    path = bundled_minilm_path()
    cfg, tok = AutoConfig.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    h, i, n_layers = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers
    ceiling = gemm_ceiling(h, i)
    print(f"all-MiniLM-L6-v2: {n_layers} layers, hidden {h}, intermediate {i}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads: float32 ceiling {ceiling / 1e9:.0f} GFLOP/s at {2048}x{h}x{i}")
    cands, refs = scale_pairs(args.n)
    one_c, one_r = real_pairs()
    single = [(one_c + one_r)[k % (len(one_c) + len(one_r))] for k in range(2 * args.n)]
    for label, texts in ((f"bench_freeform_scale texts (two captions joined), {args.n:,} pairs", cands + refs),
                         (f"single real captions, {args.n:,} pairs", single)):
        lengths = [len(ids) for ids in tok(texts, truncation=True, max_length=512)["input_ids"]]
        flop = sum(flop_per_text(n, h, i, n_layers) for n in lengths)
        print(f"{label}: {len(texts):,} texts, {sum(lengths) / len(lengths):.1f} tokens on average, "
              f"{flop / 1e12:.1f} TFLOP -> floor {flop / ceiling:.0f} s")


if __name__ == "__main__":
    main()
