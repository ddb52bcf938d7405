"""The default free-form metric set plus BERTScore on N distinct pairs x Correct and Random, cold.

    .venv/bin/python benchmarks/bench_freeform_scale.py [--n 20000] [--threads N]

What a user's first ``musiceval score freeform`` of a large answer file costs: BLEU, BLEU-4,
METEOR, ROUGE-L, CIDEr-D, sentence cosine (the CLI's default set) and BERTScore F1, both
conditions, an empty on-disk cache, models loaded from disk, in one fresh process. Pairs:
``lexical_data.scale_pairs(N)`` (two real CMI-Bench captioning pairs joined into one, so all N
pairs are distinct and every word is real; texts about twice a caption's length); Random: the
candidate of pair ``(k + N/2) mod N`` (``second_condition``). Model: the bundled
all-MiniLM-L6-v2 for both embedding metrics, BERTScore on its layer 6.

Reported: whole-process wall time (interpreter start to exit, measured by the parent), peak RSS
(``getrusage`` of the child), the seconds of each metric group inside the child, and the texts
each model embedded. There is no peer implementation that computes this set in one run; the
reference libraries' figures per metric family are in bench_lexical_scale.py and bench_embeddings.py.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("NLTK_DATA", str(Path(sys.prefix) / "nltk_data"))

LEXICAL = ("bleu", "bleu4", "meteor", "rouge_l", "cider")
CONDITIONS = ("correct", "random")


def child(n: int, cache_dir: str, threads: int | None) -> None:
    from lexical_data import scale_pairs, second_condition

    from musiceval.data.answers import AnswerSet
    from musiceval.records import Item, Response
    from musiceval.protocols.freeform.engine import FreeformEvaluation, Models

    if threads:
        import torch

        torch.set_num_threads(threads)
    cands, refs = scale_pairs(n)
    texts = {"correct": cands, "random": second_condition(cands)}
    ids = [f"pair{k:06d}" for k in range(n)]
    data = AnswerSet(items=[Item(id=i, question="Describe the music.", reference=r) for i, r in zip(ids, refs)],
                        responses=[Response(i, cond, "model", "Describe the music.", texts[cond][k])
                                   for cond in CONDITIONS for k, i in enumerate(ids)])
    models = Models(cache_dir=cache_dir)
    run = FreeformEvaluation(data, models=models)
    seconds, means = {}, {}
    # BERTScore before sentence cosine, as `musiceval score freeform` orders them: on the bundled
    # MiniLM one forward pass per text serves both
    for group, metrics in (("lexical", LEXICAL), ("bertscore", ("bertscore",)), ("sentence_cosine", ("sentence_cosine",))):
        t = time.perf_counter()
        for cond in CONDITIONS:
            for metric in metrics:
                s = run.scores(metric, cond)
                if s.failures or s.n != n:
                    raise SystemExit(f"{metric}/{cond}: {s.n} scored, failures {list(s.failures)[:3]}")
                means[f"{metric}/{cond}"] = float(s.values.mean())
        seconds[group] = time.perf_counter() - t
    print(json.dumps({"n": n, "seconds": seconds, "means": means,
                      "sentence_encoded": models.encoder("sentence").n_encoded,
                      "bertscore_embedded": models.bertscorer().n_embedded,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--quick", action="store_true", help="2,000 pairs")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.n = 2000
    if args.child:
        child(args.n, args.cache, args.threads)
        return
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.n} distinct pairs x 2 conditions, cold")
    with tempfile.TemporaryDirectory(prefix="bench-freeform-") as cache:
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, "--child", "--n", str(args.n), "--cache", cache,
                               *(["--threads", str(args.threads)] if args.threads else [])],
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
                                                                   "TOKENIZERS_PARALLELISM": "false"})
        wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"the run failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    parts = ", ".join(f"{k} {v:.1f} s" for k, v in out["seconds"].items())
    print(f"{args.n} pairs x 2: {wall:.1f} s whole process ({parts}); peak RSS {out['peak_rss_mb']:.0f} MB; "
          f"texts embedded: sentence {out['sentence_encoded']}, BERTScore {out['bertscore_embedded']}  "
          f"(load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
