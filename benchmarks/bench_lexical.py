"""Lexical metrics on 5,040 pairs: musiceval vs the reference implementations, same run.

    .venv/bin/python benchmarks/bench_lexical.py [--pairs 5040]

Pairs: the 396 scorable MiniDashengLM answers of fixtures/freeform, each against its own
reference and then against the references of the next items (rotations), until 5,040 distinct
(answer, reference) pairs: the size of the MusicQA MTG-Jamendo evaluation split.

Reference pipeline (per-pair values): nltk ``sentence_bleu`` (method3; BLEU and BLEU-4), nltk
``meteor_score`` (WordNet), rouge-score ``RougeScorer(["rougeL"])``, pycocoevalcap ``Cider``.
musiceval: ``lexical_scores`` (five metrics, one call). Both read the same tokens. The script
checks that every value agrees to 1e-6 and prints wall times; WordNet loading is timed apart.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("NLTK_DATA", str(Path(sys.prefix) / "nltk_data"))

import numpy as np  # noqa: E402

from musiceval.data.musicqa import load_dasheng_musicqa  # noqa: E402
from musiceval.metrics.lexical import lexical_scores, word_tokens  # noqa: E402
from musiceval.metrics.meteor import require_wordnet  # noqa: E402


def make_pairs(n: int):
    data = load_dasheng_musicqa(ROOT / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl")
    refs = {it.id: it.reference for it in data.items}
    outs = [r.text for r in data.responses]
    ref_list = [refs[r.item_id] for r in data.responses]
    cands, references = [], []
    shift = 0
    while len(cands) < n:
        for i, c in enumerate(outs):
            cands.append(c)
            references.append(ref_list[(i + shift) % len(ref_list)])
        shift += 1
    return cands[:n], references[:n]


def reference_pipeline(cands, refs):
    from nltk.corpus import wordnet
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    from nltk.translate.meteor_score import meteor_score
    from pycocoevalcap.cider.cider import Cider
    from rouge_score import rouge_scorer

    t = time.perf_counter()
    wordnet.ensure_loaded()
    wordnet.synsets("music")
    load = time.perf_counter() - t
    m3 = SmoothingFunction().method3
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    t = time.perf_counter()
    hyp = [list(word_tokens(c)) for c in cands]
    ref = [list(word_tokens(r)) for r in refs]
    out = {
        "bleu": np.array([sentence_bleu([r], h, smoothing_function=m3) for h, r in zip(hyp, ref)]),
        "bleu4": np.array([sentence_bleu([r], h, weights=(0, 0, 0, 1), smoothing_function=m3) for h, r in zip(hyp, ref)]),
        "meteor": np.array([meteor_score([r], h) for h, r in zip(hyp, ref)]),
        "rouge_l": np.array([scorer.score(r, c)["rougeL"].fmeasure for c, r in zip(cands, refs)]),
    }
    gts = {k: [" ".join(r)] for k, r in enumerate(ref)}
    res = {k: [" ".join(h)] for k, h in enumerate(hyp)}
    out["cider"] = np.asarray(Cider().compute_score(gts, res)[1])
    return out, time.perf_counter() - t, load


def ours(cands, refs):
    t = time.perf_counter()
    require_wordnet()
    load = time.perf_counter() - t
    t = time.perf_counter()
    out = lexical_scores(cands, refs)
    return out, time.perf_counter() - t, load


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=5040)
    args = parser.parse_args()
    cands, refs = make_pairs(args.pairs)
    print(f"{len(cands)} pairs, {len(set(zip(cands, refs)))} distinct; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    mine, t_ours, load_ours = ours(cands, refs)
    theirs, t_ref, load_ref = reference_pipeline(cands, refs)
    for name in mine:
        diff = float(np.max(np.abs(mine[name] - theirs[name])))
        print(f"  {name:8s} mean {mine[name].mean():.6f}  max |musiceval - reference| = {diff:.2e}")
        assert diff < 1e-6, name
    print(f"musiceval : {t_ours:7.2f} s for five metrics (+ {load_ours:.2f} s WordNet load)")
    print(f"reference : {t_ref:7.2f} s for five metrics (+ {load_ref:.2f} s WordNet load)")
    print(f"speed-up  : {t_ref / t_ours:5.1f}x  (with loads: {(t_ref + load_ref) / (t_ours + load_ours):.1f}x)")


if __name__ == "__main__":
    main()
