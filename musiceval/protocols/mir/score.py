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

from typing import Any

from musiceval.data.cmibench import TASKS, CmiBenchFormatError
from musiceval.data.errors import InputError
from musiceval.keys import Key, cache_dir_key
from musiceval.protocols.mir.engine import DEFAULT_ENCODER, name_models
from musiceval.protocols.mir.metrics.compat import COMPAT_MODES
from musiceval.protocols.mir.metrics.tasks import TaskError
from musiceval.protocols.scoring import (ScoreReport, ScoreRequest, chance_rows, declared_scales, excluded_entry,
                                         headline_scores,
                                         load_protocol_answers)
from musiceval.ranges import AT_LEAST_ONE, NON_NEGATIVE_INT

FLAGS = {
    "task": Key(str, None, "CMI-Bench task (default: from the file name <model>_<task>.jsonl)", choices=TASKS),
    "compat": Key(str, None, "reproduce the CMI-Bench toolkit's scoring, quirks included: cmi-bench (the toolkit as "
                             "its default branch scores), cmi-bench@<commit> (evaluate.py at that commit) "
                             "(default: corrected rules)", choices=[m for m in COMPAT_MODES if m]),
    "encoder": Key(str, DEFAULT_ENCODER, "text encoder for tagging tasks: minilm (offline default), "
                                         "bge:BAAI/bge-large-en-v1.5 (the published choice), st:DIR"),
    "cache_dir": cache_dir_key("embedding cache (DIR/embeddings)"),
    "bertscore_model": Key(str, None, "captioning BERTScore model: minilm (bundled; the default), a hub id or a local "
                                      "directory; --compat cmi-bench defaults to the toolkit's roberta-large; none skips "
                                      "BERTScore", metavar="MODEL"),
    "bertscore_layers": Key(int, None, "BERTScore layer (default: 6 for minilm, 17 for roberta-large and in compat mode, "
                                       "else bert-score's table)", NON_NEGATIVE_INT, metavar="N"),
    "threads": Key(int, None, "torch threads of the tagging encoder and captioning BERTScore (default: torch's, one per "
                              "core); 1 on a machine other jobs share (a cold tagging run was 4x faster there); same "
                              "results", AT_LEAST_ONE, metavar="N"),
    "strict": Key(bool, False, "a metric whose model cannot be loaded (captioning BERTScore) is an error, not an absent "
                               "key", switch=True),
}


def mir_run(cls: type, request: ScoreRequest):
    """``(MirProtocol, AnswerSet)`` of one output file: load_answers (``--task``: the CMI-Bench reader for
    that task) -> ``from_answers``, with the models named and the BERTScore reason in the notes
    (:func:`musiceval.protocols.mir.engine.name_models`), ``--strict`` applied."""
    from musiceval.cache_dir import EMBEDDINGS, cache_folder
    from musiceval.data.formats import FormatError
    from musiceval.data.formats_builtin import load_cmi_bench
    from musiceval.protocols.scoring import ProtocolSettings

    opts, path = request.options, request.file
    if opts.get("task"):
        try:
            answers = load_cmi_bench(path, opts["task"])
        except (CmiBenchFormatError, FormatError, ValueError) as exc:
            raise InputError(str(exc)) from None
    else:
        answers = load_protocol_answers(path, request.format, "mir")
    encoder = opts.get("encoder", DEFAULT_ENCODER)
    options = {"compat": opts.get("compat"), "encoder": encoder, "cache_dir": cache_folder(opts.get("cache_dir"), EMBEDDINGS),
               "bertscore_model": opts.get("bertscore_model"), "bertscore_layers": opts.get("bertscore_layers"),
               "threads": opts.get("threads")}
    try:
        protocol = cls.from_answers(answers, ProtocolSettings(seed=request.seed, options=options))
    except InputError:
        raise
    except (TaskError, ValueError) as exc:
        raise InputError(f"{path}: {exc}") from None
    if protocol.bert_info and protocol.bert_info["error"] and opts.get("strict"):
        raise InputError(f"{path}: {protocol.bert_info['error']}")
    name_models(protocol.result("correct"), protocol.family, encoder=encoder, bert_info=protocol.bert_info,
                bertscore_computed=protocol.bert_info is not None)
    return protocol, answers


def score_mir(cls: type, request: ScoreRequest) -> ScoreReport:
    """Flags -> :class:`musiceval.protocols.mir.MirProtocol` -> the task's metrics, baseline and breakdown."""
    from musiceval import progress

    if not request.file:
        raise InputError("score mir: pass the output file, e.g. ltu_GTZAN.jsonl")
    protocol, answers = mir_run(cls, request)
    result = protocol.result("correct")
    failures = [{"item_id": f.item_id, "error": f.reason} for f in (*answers.failures, *result.failures)]
    per_item: list[dict[str, Any]] = []
    for metric, scores in result.per_item.items():
        per_item.extend({"item_id": i, "metric": metric, "value": float(v)} for i, v in zip(scores.ids, scores.values))
    per_item.extend(failures)
    metrics = [m for m in protocol.metrics if m in result.per_item]
    with progress.bar(len(metrics), desc=f"mir {result.task}", unit="metric") as bar:
        headline = {}
        for metric in metrics:
            headline.update(headline_scores(protocol, [metric]))
            bar.update(1)
    return ScoreReport(
        n=len(answers.items) + len(answers.failures), metrics=result.metrics, per_item=per_item, failures=failures,
        headline=headline, chances=chance_rows(protocol, headline), scales=declared_scales(protocol, headline),
        extra={"task": result.task, **({"variant": answers.extra["variant"]} if answers.extra.get("variant") else {}),
               "model": answers.model, "compat": result.compat, **excluded_entry(protocol),
               "baseline": result.baseline_metrics, "breakdown": result.breakdown, "notes": result.notes,
               **result.models},
    )
