"""CMI-Bench MIR tasks scored from a model's raw output file: the models, caches and file scoring
behind :class:`musiceval.protocols.mir.MirProtocol` and ``musiceval score mir``
(:mod:`musiceval.protocols.mir.score`, which documents the flags and output).

:func:`score_file` scores one output file; :func:`bertscore_choice` picks the captioning BERTScore
model and layer (never swapped silently: a model that cannot be loaded is a reason naming the fix,
:func:`~musiceval.protocols.mir.models.load_bertscorer`); :func:`query_prefix_for` and
:func:`default_cache_dir` give the tagging encoder's query prefix and cache. The shared models,
thread settings and the on-disk baseline store are in :mod:`musiceval.protocols.mir.models`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from musiceval.data.cmibench import CmiBenchFormatError, load_outputs
from musiceval.data.errors import InputError
from musiceval.protocols.mir.metrics.tasks import FAMILIES, TaskError, TaskResult, is_bge, score_task
from musiceval.protocols.mir.metrics.captioning import (
    CMI_BENCH_BERTSCORE_LAYERS,
    CMI_BENCH_BERTSCORE_MODEL,
)
from musiceval.protocols.mir.models import (  # noqa: F401  (re-exported: the models and caches behind score mir)
    LOAD_SECONDS,
    BaselineStore,
    load_bertscorer,
    make_embedder,
    shared_bertscorer,
    shared_encoder,
)

DEFAULT_ENCODER = "minilm"
DEFAULT_BERTSCORE_MODEL = "minilm"


def default_cache_dir() -> Path:
    """The embedding cache: :func:`musiceval.cache_dir.default_cache_dir` ``/ "embeddings"``."""
    from musiceval import cache_dir

    return cache_dir.default_cache_dir() / cache_dir.EMBEDDINGS


def query_prefix_for(spec: str, compat: str | None) -> str:
    """The encoder's query instruction before each response: GTE-Qwen2's in both modes (the toolkit at
    35235cb encodes with its query prompt); BGE's in default mode only (the older toolkit built BGE with
    the instruction but called ``encode``, which ignores it)."""
    if spec.startswith("gte:"):
        from musiceval.encoders.gte import GTE_QUERY_PROMPT

        return GTE_QUERY_PROMPT
    if compat or not is_bge(spec):
        return ""
    from musiceval.encoders.bge import BGE_QUERY_INSTRUCTION

    return BGE_QUERY_INSTRUCTION


def bertscore_choice(model: str | None, layers: int | None, compat: str | None) -> tuple[str, int]:
    """The BERTScore ``(model, layer)`` of a run: the toolkit's roberta-large/17 in compat mode,
    the bundled MiniLM/6 by default; a model bert-score does not know needs ``--bertscore-layers``."""
    model = model or (CMI_BENCH_BERTSCORE_MODEL if compat else DEFAULT_BERTSCORE_MODEL)
    if layers is None:
        from bert_score.utils import model2layers

        if model == "minilm":
            layers = 6
        elif compat:  # a local copy of the toolkit's roberta-large
            layers = CMI_BENCH_BERTSCORE_LAYERS
        else:
            layers = model2layers.get(model)
        if layers is None:
            raise InputError(f"--bertscore-model {model!r}: bert-score does not know its layer; pass --bertscore-layers N")
    if layers < 1:
        raise InputError(f"--bertscore-layers must be >= 1, got {layers}")
    return model, int(layers)


def score_file(path: str | os.PathLike[str], *, task: str | None = None, compat: str | None = None,
               encoder: str = DEFAULT_ENCODER, cache_dir: str | os.PathLike[str] | None = None,
               bertscore_model: str | None = None, bertscore_layers: int | None = None,
               strict: bool = False, threads: int | None = None) -> tuple[TaskResult, Any]:
    """Load one output file and score it; returns the task result and the loaded file.

    ``strict``: a metric whose model cannot be loaded (captioning BERTScore) is an
    :class:`InputError` instead of an absent key with a note. ``threads``: torch threads of the
    tagging encoder and the captioning BERTScore model
    (:func:`~musiceval.protocols.mir.models.torch_threads`; default torch's).
    """
    try:
        loaded = load_outputs(path, task=task)
    except CmiBenchFormatError as exc:
        raise InputError(str(exc)) from None
    except ValueError as exc:
        raise InputError(str(exc)) from None
    family = FAMILIES[loaded.task]
    embed = make_embedder(encoder, cache_dir, threads=threads) if family == "tagging" else None
    scorer, bert_info = None, None
    if family == "captioning" and bertscore_model == "none":
        bert_info = {"model": "none", "error": None}
    elif family == "captioning":
        model, layers = bertscore_choice(bertscore_model, bertscore_layers, compat)
        scorer, reason = shared_bertscorer(model, layers, cache_dir, threads=threads)
        if reason and strict:
            raise InputError(f"{path}: {reason}")
        bert_info = {"model": model, "layers": layers, "rescaled": False, "error": reason}
    lexical = None
    if family == "captioning" and cache_dir:  # the lexical scores, beside the embeddings
        from musiceval.metrics.lexical_cache import LexicalScoreCache

        lexical = LexicalScoreCache(cache_dir)
    try:
        result = score_task(loaded.task, loaded.records, compat=compat, embed=embed,
                            query_prefix=query_prefix_for(encoder, compat), bertscorer=scorer,
                            baseline_memo=BaselineStore(cache_dir) if cache_dir else None, lexical_cache=lexical)
    except (TaskError, ValueError) as exc:
        raise InputError(f"{path}: {exc}") from None
    name_models(result, family, encoder=encoder, bert_info=bert_info, bertscore_computed=scorer is not None)
    return result, loaded


def name_models(result: TaskResult, family: str, *, encoder: str, bert_info: dict | None, bertscore_computed: bool) -> None:
    """Name the models ``result`` used (``models["encoder"]`` for tagging, ``models["bertscore"]`` for
    captioning) and, when BERTScore was not computed, put the precise reason (the model's error, or
    ``--bertscore-model none``) in ``notes`` in place of :func:`score_task`'s generic one."""
    if family == "tagging":
        result.models["encoder"] = encoder
    if family != "captioning":
        return
    bert_info = bert_info or {"model": "none", "error": None}
    result.models["bertscore"] = bert_info
    why = bert_info["error"] or (None if bertscore_computed else "BERTScore not computed: --bertscore-model none")
    if why:
        result.notes[:] = [n for n in result.notes if not n.startswith("BERTScore not computed")] + [why]
