"""The default free-form metric set plus BERTScore on N distinct pairs x Correct and Random, cold.

    .venv/bin/python benchmarks/bench_freeform_scale.py [--n 20000] [--threads N] [--quick | --smoke] [--json OUT]

What a user's first ``musiceval score freeform`` of a large answer file costs: BLEU, BLEU-4,
METEOR, ROUGE-L, CIDEr-D, sentence cosine (the CLI's default set) and BERTScore F1, both
conditions, an empty on-disk cache, models loaded from disk, in one fresh process. Pairs:
``lexical_data.scale_pairs(N)`` (two real CMI-Bench captioning pairs joined into one, so all N
pairs are distinct and every word is real; texts about twice a caption's length); Random: the
candidate of pair ``(k + N/2) mod N`` (``second_condition``). Model: the bundled
all-MiniLM-L6-v2 for both embedding metrics, BERTScore on its layer 6.

Reported: whole-process wall time (interpreter start to exit, measured by the parent), peak RSS
(``getrusage`` of the child; also as it stood after each metric group), the seconds of each metric
group inside the child, BERTScore's own split (model, cache reads and writes, greedy matching), the
texts each model embedded, and BERTScore's seconds over its floor: what its encoder's float32
matrix products on the texts it embeds need at the machine's best measured rate
(bench_model_floor.py, the ceiling measured by the parent just before and after the run, the
better kept). There is no peer implementation that computes this set in one run; the reference
libraries' figures per metric family are in bench_lexical_scale.py and bench_embeddings.py.
``--quick``: 2,000 pairs; ``--smoke``: 16 pairs and ceilings of 5 products each (seconds).
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

from lexical_data import SCALE_SMOKE_N as SMOKE_N, scale_conditions  # noqa: E402

os.environ.setdefault("NLTK_DATA", str(Path(sys.prefix) / "nltk_data"))

LEXICAL = ("bleu", "bleu4", "meteor", "rouge_l", "cider")
CONDITIONS = ("correct", "random")


def child(n: int, cache_dir: str, threads: int | None) -> None:
    from musiceval.data.answers import AnswerSet
    from musiceval.records import Item, Response
    from musiceval.metrics.embedding_models import Models
    from musiceval.protocols.freeform.engine import FreeformEvaluation

    if threads:
        import torch

        torch.set_num_threads(threads)
    texts, refs = scale_conditions(n)
    ids = [f"pair{k:06d}" for k in range(n)]
    data = AnswerSet(items=[Item(id=i, question="Describe the music.", reference=r) for i, r in zip(ids, refs)],
                        responses=[Response(i, cond, "model", "Describe the music.", texts[cond][k])
                                   for cond in CONDITIONS for k, i in enumerate(ids)])
    models = Models(cache_dir=cache_dir)
    run = FreeformEvaluation(data, models=models)
    seconds, cpu, means, rss = {}, {}, {}, {}
    # BERTScore before sentence cosine, as `musiceval score freeform` orders them: on the bundled
    # MiniLM one forward pass per text serves both
    for group, metrics in (("lexical", LEXICAL), ("bertscore", ("bertscore",)), ("sentence_cosine", ("sentence_cosine",))):
        t, c = time.perf_counter(), time.process_time()
        for cond in CONDITIONS:
            for metric in metrics:
                s = run.scores(metric, cond)
                if s.failures or s.n != n:
                    raise SystemExit(f"{metric}/{cond}: {s.n} scored, failures {list(s.failures)[:3]}")
                means[f"{metric}/{cond}"] = float(s.values.mean())
        seconds[group], cpu[group] = time.perf_counter() - t, time.process_time() - c
        rss[group] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    bert = models.bertscorer()
    print(json.dumps({"n": n, "seconds": seconds, "cpu_seconds": cpu, "means": means, "peak_rss_after_mb": rss,
                      "sentence_encoded": models.encoder("sentence").n_encoded,
                      "bertscore_embedded": bert.n_embedded, "bertscore_read": bert.n_read,
                      "bertscore_split": bert.seconds, "threads": torch_threads(),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def floor_of(n: int) -> tuple[int, float]:
    """``(texts, FLOP)``: BERTScore's distinct texts at ``n`` pairs and its encoder's FLOP on them."""
    from bench_model_floor import embedded_texts, encoder_flop

    texts = embedded_texts(scale_conditions(n))["bertscore"]
    return len(texts), encoder_flop(texts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--quick", action="store_true", help="2,000 pairs")
    ap.add_argument("--smoke", action="store_true", help=f"{SMOKE_N} pairs (seconds)")
    ap.add_argument("--json", type=Path, default=None, help="also write the child's figures (each metric's means included) here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.n = 2000
    if args.smoke:
        args.n = SMOKE_N
    if args.child:
        child(args.n, args.cache, args.threads)
        return
    from bench_model_floor import SMOKE_REPEATS, best_ceiling

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.n} distinct pairs x 2 conditions, cold",
          flush=True)
    n_texts, flop = floor_of(args.n)
    tries = {"repeats": SMOKE_REPEATS} if args.smoke else {}  # --smoke: a few products, not 200
    ceiling, one_thread = best_ceiling(**tries), best_ceiling(threads=1, **tries)
    with tempfile.TemporaryDirectory(prefix="bench-freeform-") as cache:
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, "--child", "--n", str(args.n), "--cache", cache,
                               *(["--threads", str(args.threads)] if args.threads else [])],
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
                                                                   "TOKENIZERS_PARALLELISM": "false"})
        wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"the run failed:\n{proc.stderr[-3000:]}")
    ceiling, one_thread = max(ceiling, best_ceiling(**tries)), max(one_thread, best_ceiling(threads=1, **tries))
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if args.json:
        args.json.write_text(json.dumps({**out, "wall_seconds": wall}, indent=1), encoding="utf-8")
    parts = ", ".join(f"{k} {v:.1f} s" for k, v in out["seconds"].items())
    split = ", ".join(f"{k} {v:.1f} s" for k, v in out["bertscore_split"].items())
    after = ", ".join(f"{k} {v:.0f}" for k, v in out["peak_rss_after_mb"].items())
    floor = flop / ceiling
    print(f"{args.n} pairs x 2: {wall:.1f} s whole process ({parts}); peak RSS {out['peak_rss_mb']:.0f} MB "
          f"(after {after} MB); texts embedded: sentence {out['sentence_encoded']}, BERTScore "
          f"{out['bertscore_embedded']} (rows read back {out['bertscore_read']}); torch threads {out['threads']}  "
          f"(load {os.getloadavg()[0]:.1f})")
    print(f"BERTScore: {out['seconds']['bertscore']:.1f} s ({split}) = {out['seconds']['bertscore'] / floor:.2f} x its "
          f"floor {floor:.1f} s ({n_texts} distinct texts, {flop / 1e12:.2f} TFLOP at {ceiling / 1e9:.0f} GFLOP/s on "
          f"{torch_threads()} threads); CPU {out['cpu_seconds']['bertscore']:.1f} s = "
          f"{out['cpu_seconds']['bertscore'] * one_thread / flop:.2f} x the one-thread floor "
          f"({flop / one_thread:.1f} s at {one_thread / 1e9:.0f} GFLOP/s: CPU time, which a loaded machine inflates less than wall)")


if __name__ == "__main__":
    main()
