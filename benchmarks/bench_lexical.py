"""Lexical metrics on 5,000 real distinct pairs: musiceval vs the reference implementations, one run.

    .venv/bin/python benchmarks/bench_lexical.py [--pairs 5000] [--repeats 3] [--quick] [--smoke]

Pairs (:mod:`benchmarks.lexical_data`): the first 5,000 distinct (response, reference) pairs of
the CMI-Bench MusicCaps and Song Describer outputs of MU-LLaMA and LTU, each model caption
against its own real reference; no pair is repeated or recycled.

Sides, each in its own child process (so its peak RSS is its own), interleaved ``--repeats``
times; medians reported:

- reference: nltk ``sentence_bleu`` (method3; BLEU and BLEU-4), nltk ``meteor_score`` (WordNet),
  rouge-score ``RougeScorer(["rougeL"])``, pycocoevalcap ``Cider``, all in-process, on the same
  tokens;
- musiceval: ``lexical_scores`` (five metrics, one call, a fresh process: every text tokenised,
  every WordNet synonym looked up, nothing cached from before).

Times exclude the WordNet load (timed apart: both sides load the same WordNet 3.0). Every value
is compared: BLEU, BLEU-4, METEOR, ROUGE-L to 1e-9, CIDEr-D to 1e-9 (the run fails otherwise).
Without nltk, rouge-score or pycocoevalcap installed, the reference side is skipped, saying so.
``--quick``: 1,000 pairs, one repeat; ``--smoke``: 50 pairs, one repeat.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("NLTK_DATA", str(Path(sys.prefix) / "nltk_data"))

import numpy as np  # noqa: E402

from lexical_data import peers_installed, real_pairs  # noqa: E402

METRICS = ("bleu", "bleu4", "meteor", "rouge_l", "cider")
#: the reference side's libraries
PEERS = ("nltk", "rouge_score", "pycocoevalcap")


def reference_side(cands, refs):
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    from nltk.translate.meteor_score import meteor_score
    from pycocoevalcap.cider.cider import Cider
    from rouge_score import rouge_scorer

    from musiceval.metrics.lexical import word_tokens
    from musiceval.metrics.meteor import require_wordnet

    t = time.perf_counter()
    wn = require_wordnet()  # the same WordNet 3.0 files nltk reads (see tests/metrics/test_lexical.py)
    load = time.perf_counter() - t
    m3 = SmoothingFunction().method3
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    t, c = time.perf_counter(), time.process_time()
    hyp = [list(word_tokens(x)) for x in cands]
    ref = [list(word_tokens(x)) for x in refs]
    out = {
        "bleu": [sentence_bleu([r], h, smoothing_function=m3) for h, r in zip(hyp, ref)],
        "bleu4": [sentence_bleu([r], h, weights=(0, 0, 0, 1), smoothing_function=m3) for h, r in zip(hyp, ref)],
        "meteor": [meteor_score([r], h, wordnet=wn) for h, r in zip(hyp, ref)],
        "rouge_l": [scorer.score(r, x)["rougeL"].fmeasure for x, r in zip(cands, refs)],
    }
    out["cider"] = list(Cider().compute_score({k: [" ".join(r)] for k, r in enumerate(ref)}, {k: [" ".join(h)] for k, h in enumerate(hyp)})[1])
    return out, time.perf_counter() - t, time.process_time() - c, load


def musiceval_side(cands, refs):
    from musiceval.metrics.lexical_corpus import lexical_scores
    from musiceval.metrics.meteor import require_wordnet

    t = time.perf_counter()
    require_wordnet()
    load = time.perf_counter() - t
    t, c = time.perf_counter(), time.process_time()
    out = lexical_scores(cands, refs, METRICS)
    return out, time.perf_counter() - t, time.process_time() - c, load


def child(side: str, pairs: int, values: str) -> None:
    cands, refs = real_pairs(pairs)
    out, wall, cpu, load = (reference_side if side == "reference" else musiceval_side)(cands, refs)
    np.savez(values, **{m: np.asarray(out[m], dtype=np.float64) for m in METRICS})
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"side": side, "wall_s": wall, "cpu_s": cpu, "wordnet_load_s": load, "peak_rss_mb": rss}))


def run_side(side: str, pairs: int, tmp: str) -> tuple[dict, dict]:
    values = os.path.join(tmp, f"{side}.npz")
    proc = subprocess.run([sys.executable, __file__, "--child", side, "--pairs", str(pairs), "--values", values],
                          capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if proc.returncode != 0:
        raise SystemExit(f"{side} side failed:\n{proc.stderr[-3000:]}")
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    with np.load(values) as z:
        return stats, {m: z[m] for m in METRICS}


def compare(ours: dict, theirs: dict | None) -> None:
    """Each metric's mean and, with the reference's values, the largest difference per pair (at most 1e-9)."""
    for m in METRICS:
        line = f"  {m:8s} mean {ours[m].mean():.6f}"
        if theirs is not None:
            diff = float(np.max(np.abs(ours[m] - theirs[m])))
            line += f"  max |musiceval - reference| = {diff:.1e}"
            assert diff < 1e-9, m
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1,000 pairs, 1 repeat")
    parser.add_argument("--smoke", action="store_true", help="50 pairs, 1 repeat")
    parser.add_argument("--child", choices=["reference", "musiceval"], help=argparse.SUPPRESS)
    parser.add_argument("--values", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.pairs, args.values)
        return
    if args.quick:
        args.pairs, args.repeats = 1000, 1
    if args.smoke:
        args.pairs, args.repeats = 50, 1
    cands, refs = real_pairs(args.pairs)
    print(f"{len(cands)} real pairs, {len(set(zip(cands, refs)))} distinct, {len(set(cands) | set(refs))} distinct texts; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    sides = ("musiceval", "reference") if peers_installed(*PEERS) else ("musiceval",)
    runs: dict[str, list[dict]] = {side: [] for side in sides}
    values: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeats):
            for side in sides if rep % 2 == 0 else sides[::-1]:
                stats, values[side] = run_side(side, args.pairs, tmp)
                runs[side].append(stats)
            print(f"  repeat {rep + 1}: " + ", ".join(f"{side} {runs[side][-1]['wall_s']:.2f} s" for side in sides)
                  + f" (load {os.getloadavg()[0]:.1f})")
    compare(values["musiceval"], values.get("reference"))
    med = {side: {k: statistics.median(r[k] for r in rs) for k in rs[0] if k != "side"} for side, rs in runs.items()}
    for side in sides:
        s = med[side]
        print(f"{side:9s}: {s['wall_s']:6.2f} s wall, {s['cpu_s']:6.2f} s CPU, peak RSS {s['peak_rss_mb']:.0f} MB "
              f"(+ {s['wordnet_load_s']:.2f} s WordNet load)   [median of {args.repeats}]")
    if "reference" in med:
        ratio = med["reference"]["wall_s"] / med["musiceval"]["wall_s"]
        cpu_ratio = med["reference"]["cpu_s"] / med["musiceval"]["cpu_s"]
        print(f"speed-up : {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU")


if __name__ == "__main__":
    main()
