"""The least time any float32 implementation needs to embed what the free-form set embeds on this machine.

    .venv/bin/python benchmarks/bench_model_floor.py [--n 20000] [--smoke]

The default free-form set's two embedding metrics, BERTScore on all-MiniLM-L6-v2's layer 6 and the
sentence cosine, run the bundled MiniLM; musiceval embeds each distinct text once for both
(bench_freeform_scale.py). This script bounds what is left from below, by arithmetic on measured
figures:

- the texts: exactly those ``bench_freeform_scale.py --n N`` scores (its ``pairs``: Correct and
  Random candidates and the references), counted as each model embeds them: BERTScore every
  distinct text once; the sentence encoder only the distinct texts BERTScore's pass does not give
  it (those over its 256-token limit, which it truncates; the others are mean-pooled from
  BERTScore's token embeddings: ``TokenCachedBERTScorer(pooled_id=...)``). Also, for a user whose
  answers are one caption long, the distinct texts of the first N real captioning pairs
  (``lexical_data.real_pairs``, all 7,838 at most), per 1,000 texts;
- the tokens: the bundled tokenizer's, truncated as each model truncates (BERTScore at the model's
  512, the sentence encoder at 256);
- the multiply-adds per token: the model's own config (Q, K, V, output, two feed-forward
  matrices per layer, plus attention's two products over the text's length), counted as 2 FLOP each;
- the machine's ceiling: torch's float32 matrix product at the model's own shapes (2,048 tokens x
  hidden x intermediate) on all threads, best of 200 after 3 warm-ups (the most generous figure).

Floor = FLOP / ceiling: what a perfect implementation with no tokenising, attention softmax,
layer norms, greedy matching, lexical metrics or model load would still need. Anything under it
needs fewer FLOP (a smaller or quantised model) or a faster chip, both of which change the values.
``--smoke``: bench_freeform_scale's smoke size (16 pairs) and a ceiling of 5 products, seconds.
"""
from __future__ import annotations

import argparse
import sys
import time
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

#: the token limits of the two models: BERTScore truncates at the model's 512, the sentence encoder at 256
BERTSCORE_MAX_TOKENS, SENTENCE_MAX_TOKENS = 512, 256


@lru_cache(maxsize=1)
def minilm():
    """``(config, tokenizer)`` of the bundled all-MiniLM-L6-v2."""
    from transformers import AutoConfig, AutoTokenizer

    from musiceval.encoders.sentence import bundled_minilm_path

    path = bundled_minilm_path()
    return AutoConfig.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def token_counts(texts: list[str], max_length: int) -> list[int]:
    """Each text's token count (special tokens included), truncated at ``max_length``."""
    tok = minilm()[1]
    return [len(ids) for ids in tok([t.strip() for t in texts], truncation=True, max_length=max_length)["input_ids"]]


def embedded_texts(pairs: tuple[dict[str, list[str]], list[str]]) -> dict[str, list[str]]:
    """``{"bertscore": texts, "sentence": texts}``: the distinct texts each model embeds for
    ``({condition: candidates}, references)`` in the default free-form set (module docstring)."""
    conditions, refs = pairs
    distinct = list(dict.fromkeys([t for cands in conditions.values() for t in cands] + list(refs)))
    lengths = token_counts(distinct, BERTSCORE_MAX_TOKENS)
    return {"bertscore": distinct, "sentence": [t for t, n in zip(distinct, lengths) if n > SENTENCE_MAX_TOKENS]}


def flop_per_text(n_tokens: int, hidden: int, intermediate: int, layers: int) -> int:
    """Forward FLOP of one text through a BERT encoder: per layer and token, the four attention
    projections and the two feed-forward matrices, plus QK^T and the weighted sum over the text."""
    per_token_layer = 2 * (4 * hidden * hidden + 2 * hidden * intermediate) + 2 * 2 * n_tokens * hidden
    return layers * n_tokens * per_token_layer


def encoder_flop(texts: list[str], max_length: int = BERTSCORE_MAX_TOKENS) -> float:
    """MiniLM's forward FLOP on ``texts``, each truncated at ``max_length`` tokens."""
    cfg = minilm()[0]
    return float(sum(flop_per_text(n, cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers)
                     for n in token_counts(texts, max_length)))


def gemm_ceiling(hidden: int, intermediate: int, tokens: int = 2048, repeats: int = 200) -> float:
    """Best float32 FLOP/s of ``(tokens x hidden) @ (hidden x intermediate)`` on torch's threads, of
    ``repeats`` products (on a shared machine, more tries catch more moments with both cores free)."""
    import torch

    a, b = torch.randn(tokens, hidden), torch.randn(hidden, intermediate)
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * tokens * hidden * intermediate / best


#: products timed for the ceiling at --smoke (the figure then only shows the code runs)
SMOKE_REPEATS = 5


def best_ceiling(threads: int | None = None, repeats: int = 200) -> float:
    """:func:`gemm_ceiling` at MiniLM's own shapes, on ``threads`` (default: torch's), best of ``repeats``."""
    import torch

    cfg, before = minilm()[0], torch.get_num_threads()
    torch.set_num_threads(threads or before)
    try:
        return gemm_ceiling(cfg.hidden_size, cfg.intermediate_size, repeats=repeats)
    finally:
        torch.set_num_threads(before)


def report(label: str, texts: list[str], max_length: int, ceiling: float, *, per: int | None = None) -> float:
    """Print one line (texts, tokens on average, TFLOP, floor) and return the FLOP; ``per``: the
    floor per that many texts instead of for all of them."""
    if not texts:
        print(f"{label}: no texts -> floor 0 s")
        return 0.0
    lengths = token_counts(texts, max_length)
    flop = encoder_flop(texts, max_length)
    floor = flop / ceiling * (per / len(texts) if per else 1)
    print(f"{label}: {len(texts):,} distinct texts, {sum(lengths) / len(lengths):.1f} tokens on average, "
          f"{flop / 1e12:.2f} TFLOP -> floor {floor:.1f} s{f' per {per:,} texts' if per else ''}")
    return flop


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000, help="bench_freeform_scale's pairs (default 20,000)")
    ap.add_argument("--smoke", action="store_true", help="bench_freeform_scale's smoke size (seconds)")
    args = ap.parse_args()

    import os

    import torch
    from lexical_data import SCALE_SMOKE_N, scale_conditions
    from lexical_data import real_pairs

    n = SCALE_SMOKE_N if args.smoke else args.n
    cfg = minilm()[0]
    ceiling = best_ceiling(repeats=SMOKE_REPEATS if args.smoke else 200)
    print(f"all-MiniLM-L6-v2: {cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, intermediate "
          f"{cfg.intermediate_size}; torch {torch.__version__}, {torch.get_num_threads()} threads: float32 ceiling "
          f"{ceiling / 1e9:.0f} GFLOP/s at 2048x{cfg.hidden_size}x{cfg.intermediate_size} (load {os.getloadavg()[0]:.1f})")
    texts = embedded_texts(scale_conditions(n))
    print(f"bench_freeform_scale.py --n {n} (two captions joined, Correct and Random):")
    flop = report("  BERTScore (MiniLM layer 6, 512 tokens)", texts["bertscore"], BERTSCORE_MAX_TOKENS, ceiling)
    flop += report("  sentence cosine's own pass (mean pooling, 256 tokens; the rest pooled from BERTScore's)",
                   texts["sentence"], SENTENCE_MAX_TOKENS, ceiling)
    print(f"  the set: {flop / 1e12:.2f} TFLOP -> floor {flop / ceiling:.1f} s")
    one_c, one_r = real_pairs()
    k = min(n, len(one_c))
    report(f"single real captions (the first {k:,} CMI-Bench captioning pairs), BERTScore",
           list(dict.fromkeys(one_c[:k] + one_r[:k])), BERTSCORE_MAX_TOKENS, ceiling, per=1000)


if __name__ == "__main__":
    main()
