"""``musiceval score mir``: CMI-Bench MIR tasks scored from a model's raw output file.

::

    musiceval score mir --format cmi-bench FILE [--task TASK] [--compat cmi-bench]
                        [--encoder minilm|bge:DIR|st:DIR] [--embedding-cache DIR] --json

prints ``{"protocol": "mir", "task": .., "model": .., "compat": .., "n": .., "n_failed": ..,
"metrics": {..}, "baseline": {..}, "breakdown": {..}, "notes": [..]}``; ``breakdown`` holds the
per-label scores (per genre, instrument, technique, key, tag) for bias analyses. Metric keys by task family: ``accuracy``,
``weighted_score``, ``f_measure``/``cmlt``/``amlt``, ``r2``, ``wer``/``cer`` (fractions),
``roc_auc``/``pr_auc``, ``overall_accuracy``, ``macro_f1``/``micro_f1`` and the free-form metric
names for captioning. The task comes from the file name ``<model>_<task>.jsonl`` unless ``--task``
is given. ``n`` counts every record of the file; ``n_failed`` the records that were malformed or
whose response could not be parsed (see ``--per-item`` for the reasons).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from musiceval.data.cmibench import TASKS, CmiBenchFormatError, load_outputs
from musiceval.metrics.mir import FAMILIES, TaskError, TaskResult, is_bge, score_task
from musiceval.scoring import InputError, Scorer, ScoreOutput, register_scorer

DEFAULT_ENCODER = "minilm"


def default_cache_dir() -> Path:
    """``$MUSICEVAL_CACHE/embeddings`` or ``~/.cache/musiceval/embeddings``."""
    root = os.environ.get("MUSICEVAL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "musiceval")
    return Path(root) / "embeddings"


def make_embedder(spec: str, cache_dir: str | os.PathLike[str] | None):
    """A texts -> rows function over ``load_text_encoder(spec)`` with an on-disk cache.

    The encoder is loaded on first use, so non-tagging tasks never load a model.
    """
    from musiceval.encoders import EmbeddingCache, embed_distinct, load_text_encoder

    if spec.startswith("bge"):
        import musiceval.encoders.bge  # noqa: F401  (registers the "bge:" prefix)
    cache = EmbeddingCache(cache_dir) if cache_dir else None
    state: dict[str, Any] = {}

    def embed(texts):
        if "encoder" not in state:
            state["encoder"] = load_text_encoder(spec)
        return embed_distinct(state["encoder"], list(texts), cache=cache)

    return embed


def query_prefix_for(spec: str, compat: str | None) -> str:
    """BGE's retrieval instruction before each response in default mode (none in compat mode:
    the toolkit builds the model with the instruction but calls ``encode``, which ignores it)."""
    if compat or not is_bge(spec):
        return ""
    from musiceval.encoders.bge import BGE_QUERY_INSTRUCTION

    return BGE_QUERY_INSTRUCTION


def score_file(path: str | os.PathLike[str], *, task: str | None = None, compat: str | None = None,
               encoder: str = DEFAULT_ENCODER, cache_dir: str | os.PathLike[str] | None = None) -> tuple[TaskResult, Any]:
    """Load one output file and score it; returns the task result and the loaded file."""
    try:
        loaded = load_outputs(path, task=task)
    except CmiBenchFormatError as exc:
        raise InputError(str(exc)) from None
    except ValueError as exc:
        raise InputError(str(exc)) from None
    embed = make_embedder(encoder, cache_dir) if FAMILIES[loaded.task] == "tagging" else None
    try:
        result = score_task(loaded.task, loaded.records, compat=compat, embed=embed,
                            query_prefix=query_prefix_for(encoder, compat))
    except (TaskError, ValueError) as exc:
        raise InputError(f"{path}: {exc}") from None
    return result, loaded


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", choices=TASKS, help="CMI-Bench task (default: from the file name <model>_<task>.jsonl)")
    p.add_argument("--compat", choices=["cmi-bench"], default=None,
                   help="reproduce the CMI-Bench toolkit's scoring, quirks included (default: corrected rules)")
    p.add_argument("--encoder", default=DEFAULT_ENCODER,
                   help="text encoder for tagging tasks: minilm (offline default), bge:BAAI/bge-large-en-v1.5 "
                        "(the published choice), st:DIR")
    p.add_argument("--embedding-cache", default=None, metavar="DIR",
                   help="embedding cache directory (default $MUSICEVAL_CACHE/embeddings or ~/.cache/musiceval/embeddings)")


def _score(args: argparse.Namespace) -> ScoreOutput:
    if not args.file:
        raise InputError("score mir: pass the output file, e.g. ltu_GTZAN.jsonl")
    cache_dir = getattr(args, "embedding_cache", None) or default_cache_dir()
    result, loaded = score_file(args.file, task=getattr(args, "task", None), compat=getattr(args, "compat", None),
                                encoder=getattr(args, "encoder", DEFAULT_ENCODER), cache_dir=cache_dir)
    failures = [{"item_id": f.item_id, "error": f.reason} for f in (*loaded.failures, *result.failures)]
    per_item: list[dict[str, Any]] = []
    for metric, scores in result.per_item.items():
        per_item.extend({"item_id": i, "metric": metric, "value": float(v)} for i, v in zip(scores.ids, scores.values))
    per_item.extend(failures)
    return ScoreOutput(
        protocol="mir",
        n=loaded.n,
        metrics=result.metrics,
        per_item=per_item,
        failures=failures,
        extra={"task": result.task, "model": loaded.model, "compat": result.compat,
               "baseline": result.baseline_metrics, "breakdown": result.breakdown, "notes": result.notes},
    )


register_scorer(Scorer(
    name="mir",
    configure=_configure,
    score=_score,
    help="CMI-Bench MIR tasks (accuracy, key, beats, R^2, WER/CER, tagging AUC, melody, Guzheng F1, captioning)",
    formats=("cmi-bench",),
))
