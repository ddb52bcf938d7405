"""``musiceval score mir``: CMI-Bench MIR tasks scored from a model's raw output file.

::

    musiceval score mir --format cmi-bench FILE [--task TASK] [--compat cmi-bench]
                        [--encoder minilm|bge:DIR|st:DIR] [--cache-dir DIR]
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
from typing import Any

from musiceval.commands import InputError, Scorer, ScoreOutput, excluded_entry, register_scorer
from musiceval.data.cmibench import TASKS, CmiBenchFormatError
from musiceval.protocols.mir.metrics.tasks import TaskError
from musiceval.ranges import AT_LEAST_ONE, NON_NEGATIVE_INT, arg
from musiceval.protocols.mir.engine import DEFAULT_ENCODER, name_models


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", choices=TASKS, help="CMI-Bench task (default: from the file name <model>_<task>.jsonl)")
    from musiceval.protocols.mir.metrics.compat import COMPAT_MODES

    p.add_argument("--compat", choices=[m for m in COMPAT_MODES if m], default=None,
                   help="reproduce the CMI-Bench toolkit's scoring, quirks included: cmi-bench (the toolkit as "
                        "its default branch scores), cmi-bench@<commit> (evaluate.py at that commit) "
                        "(default: corrected rules)")
    p.add_argument("--encoder", default=DEFAULT_ENCODER,
                   help="text encoder for tagging tasks: minilm (offline default), bge:BAAI/bge-large-en-v1.5 "
                        "(the published choice), st:DIR")
    from musiceval.cache_dir import add_cache_dir_argument

    add_cache_dir_argument(p, "embedding cache (DIR/embeddings)")
    p.add_argument("--bertscore-model", default=None, metavar="MODEL",
                   help="captioning BERTScore model: minilm (bundled; the default), a hub id or a local directory; "
                        "--compat cmi-bench defaults to the toolkit's roberta-large; none skips BERTScore")
    p.add_argument("--bertscore-layers", type=arg(NON_NEGATIVE_INT), default=None, metavar="N",
                   help="BERTScore layer (default: 6 for minilm, 17 for roberta-large and in compat mode, "
                        "else bert-score's table)")
    p.add_argument("--threads", type=arg(AT_LEAST_ONE), default=None, metavar="N",
                   help="torch threads of the tagging encoder and captioning BERTScore (default: torch's, one per "
                        "core); 1 on a machine other jobs share (a cold tagging run was 4x faster there); same results")
    p.add_argument("--strict", action="store_true",
                   help="a metric whose model cannot be loaded (captioning BERTScore) is an error, not an absent key")


def score_protocol(path: str | os.PathLike[str], *, task: str | None = None, fmt: str | None = None,
                   compat: str | None = None, encoder: str = DEFAULT_ENCODER, cache_dir: str | os.PathLike[str] | None = None,
                   bertscore_model: str | None = None, bertscore_layers: int | None = None, strict: bool = False, seed: int = 0,
                   threads: int | None = None):
    """``(MirProtocol, AnswerSet)`` of one output file: load_answers -> MirProtocol.from_answers, with
    the models named and the BERTScore reason in the notes (:func:`musiceval.protocols.mir.engine.name_models`, as ``score_file`` does), ``strict`` applied."""
    from musiceval.data.formats import FormatError
    from musiceval.data.formats_builtin import load_cmi_bench
    from musiceval.protocols import ProtocolSettings
    from musiceval.commands import load_protocol_answers
    from musiceval.protocols.mir import MirProtocol

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
    if protocol.bert_info and protocol.bert_info["error"] and strict:
        raise InputError(f"{path}: {protocol.bert_info['error']}")
    name_models(protocol.result("correct"), protocol.family, encoder=encoder, bert_info=protocol.bert_info,
                bertscore_computed=protocol.bert_info is not None)
    return protocol, answers


def _score(args: argparse.Namespace) -> ScoreOutput:
    """Flags -> :class:`musiceval.protocols.mir.MirProtocol` (load_answers -> from_answers)."""
    if not args.file:
        raise InputError("score mir: pass the output file, e.g. ltu_GTZAN.jsonl")
    from musiceval.cache_dir import EMBEDDINGS, cache_path

    cache_dir = cache_path(args, EMBEDDINGS)
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
    from musiceval.commands.summary import protocol_chances, protocol_headline

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
        extra={"task": result.task, "model": answers.model, "compat": result.compat, **excluded_entry(protocol),
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
