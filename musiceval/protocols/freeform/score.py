"""``musiceval score freeform``: free-form QA (docs/protocols/freeform.md) from a file of recorded answers.

The conditions, metrics and their rules are those of :mod:`musiceval.protocols.freeform.engine`; the flags
select them (``--metrics``, ``--conditions``, ``--rewrites``, ``--random-draws``, ``--data-dir``,
``--cache-dir``). Besides the one JSON shape (docs/cli.md), the output has ``n_per_condition``
{condition: items scored}, ``seed``, ``correct_on_random_items`` (Correct on the items Random scored)
and, with Correct and Random, ``paired_difference``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from musiceval.conditions import load_rewrites
from musiceval.data.errors import InputError
from musiceval.keys import Key, cache_dir_key
from musiceval.protocols.freeform.engine import EMBEDDING_METRICS, FREEFORM_CONDITIONS, METRICS
from musiceval.protocols.scoring import (ProtocolSettings, ScoreReport, ScoreRequest, by_condition, declared_scales,
                                         excluded_entry, load_protocol_answers)
from musiceval.ranges import AT_LEAST_ONE, NON_NEGATIVE_INT

FLAGS = {
    "metrics": Key(str, "bleu,bleu4,meteor,rouge_l,cider,sentence_cosine",
                   f"comma-separated, from {','.join(METRICS)} and any metric registered with "
                   "musiceval.metrics.registry.register_metric"),
    "conditions": Key(str, "correct,random", f"comma-separated, from {','.join(FREEFORM_CONDITIONS)}"),
    "random_draws": Key(int, 1, "independent Random derangements, averaged per item", AT_LEAST_ONE),
    "rewrites": Key(str, None, "Skyline/Adversarial JSONL (fixtures/freeform/rewrites_handwritten.jsonl layout)"),
    "sentence_encoder": Key(str, "minilm", "encoder of sentence_cosine (minilm, st:<dir>)"),
    "clap": Key(str, None, "CLAP hub id, directory or LAION .pt (default $MUSICEVAL_CLAP or laion/larger_clap_music)"),
    "bertscore_model": Key(str, "minilm", "bert-score model dir or hub id (minilm = bundled all-MiniLM-L6-v2)"),
    "bertscore_layers": Key(int, 6, "BERTScore layer", NON_NEGATIVE_INT),
    "bertscore_baseline": Key(str, None, "TSV (LAYER,P,R,F) for baseline rescaling"),
    "cache_dir": cache_dir_key("embedding cache (DIR/embeddings)"),
    "data_dir": Key(str, None, "root of the items' 'audio' paths for clap_audio (default: FILE's folder)"),
}


def _split(value: str, allowed: Sequence[str], flag: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise InputError(f"{flag}: unknown {bad or 'empty list'}; choose from {','.join(allowed)}")
    return names


def score_freeform(cls: type, request: ScoreRequest) -> ScoreReport:
    """Flags -> :class:`musiceval.protocols.freeform.FreeformProtocol` -> each metric under each condition."""
    from musiceval.metrics.registry import metric_names

    opts = request.options
    metrics = _split(opts.get("metrics", ""), metric_names("freeform"), "--metrics")
    conditions = _split(opts.get("conditions", ""), FREEFORM_CONDITIONS + ("text_only", "silence"), "--conditions")
    from musiceval.cache_dir import EMBEDDINGS, cache_folder

    if not request.file:
        raise InputError(f"score freeform: no FILE given; pass {cls.answer_file}")
    data = load_protocol_answers(request.file, request.format, "freeform")
    if not data.items:
        raise InputError(f"{request.file}: no scorable item ({len(data.failures)} failures; first: "
                         f"{data.failures[0].reason if data.failures else 'empty file'})")
    rewrites = None
    if any(c in ("skyline", "adversarial") for c in conditions):
        if not opts.get("rewrites"):
            raise InputError("--conditions skyline/adversarial need --rewrites FILE (e.g. fixtures/freeform/rewrites_handwritten.jsonl)")
        try:
            rewrites = load_rewrites(opts["rewrites"])
        except (ValueError, FileNotFoundError) as exc:
            raise InputError(str(exc)) from None
    data_dir = Path(opts["data_dir"]) if opts.get("data_dir") else Path(request.file).parent
    if "clap_audio" in metrics and not data_dir.is_dir():
        raise InputError(f"--data-dir {str(data_dir)!r} is not a directory; clap_audio reads the items' 'audio' files from it")
    protocol = cls.from_answers(data, ProtocolSettings(seed=request.seed, options={
        "metrics": metrics, "rewrites": rewrites, "random_draws": opts["random_draws"],
        "sentence_encoder": opts["sentence_encoder"], "clap": opts.get("clap"), "bertscore_model": opts["bertscore_model"],
        "bertscore_layers": opts["bertscore_layers"], "bertscore_baseline": opts.get("bertscore_baseline"),
        "cache_dir": str(cache_folder(opts.get("cache_dir"), EMBEDDINGS)), "data_dir": data_dir}))
    run, models = protocol.evaluation, protocol.evaluation.models
    missing = [c for c in conditions if c not in run.texts]
    if missing:
        raise InputError(f"{request.file}: no responses for condition(s) {missing}; record them (condition field) or drop them from --conditions")
    out_metrics: dict[str, dict[str, float | None]] = {}
    per_item: dict[tuple[str, str], dict[str, Any]] = {}
    failures: dict[str, dict[str, Any]] = {f.item_id: {"item_id": f.item_id, "error": f.reason} for f in data.failures}
    n_scored: dict[str, int] = {}
    from musiceval import progress

    # one step per (metric, condition): items scored per second and the ETA of the whole run
    total = sum(len(draw) for c in conditions for draw in run.texts[c]) * len(metrics)
    bar = progress.bar(total, desc="freeform", unit="item")
    # BERTScore first: on the bundled MiniLM it also stores sentence_cosine's vectors (one forward
    # pass per text for both metrics); the output keeps the order asked for
    order = sorted(metrics, key=lambda m: m != "bertscore")
    for condition in conditions:
        out_metrics[condition] = {}
        for metric in order:
            bar.set_postfix_str(f"{metric}/{condition}", refresh=False)
            try:
                s = run.scores(metric, condition)
            except FileNotFoundError as exc:
                bar.close()
                raise InputError(str(exc)) from None
            bar.update(sum(len(draw) for draw in run.texts[condition]))
            out_metrics[condition][metric] = s.mean() if s.n else None
            n_scored[condition] = max(n_scored.get(condition, 0), s.n)
            for i, v in zip(s.ids, s.values):
                per_item.setdefault((i, condition), {"item_id": i, "condition": condition})[metric] = float(v)
            for f in s.failures:
                failures.setdefault(f.item_id, {"item_id": f.item_id, "error": f.reason})
        out_metrics[condition] = {m: out_metrics[condition][m] for m in metrics}
    bar.close()
    extra: dict[str, Any] = {"n_per_condition": n_scored, "seed": request.seed, "format": data.format, "model": protocol.model,
                             **excluded_entry(protocol)}
    headline = {m: run.scores(m, "correct") for m in metrics} if "correct" in conditions else {}
    paired_scores = {m: (run.scores(m, "correct"), run.scores(m, "random")) for m in metrics} \
        if "correct" in conditions and "random" in conditions else {}
    if "correct" in conditions and "random" in conditions:
        # the two means above cover different item sets; this is Correct on Random's items (paired)
        paired: dict[str, float | None] = {}
        for metric in metrics:
            c, r = run.scores(metric, "correct"), run.scores(metric, "random")
            keep = set(r.ids)
            vals = [v for i, v in zip(c.ids, c.values) if i in keep]
            paired[metric] = float(np.mean(vals)) if vals else None
        extra["correct_on_random_items"] = paired
    if "random" in conditions and run.unpaired:
        extra["random_unpaired"] = len(run.unpaired)
    if any(m in metrics for m in EMBEDDING_METRICS):
        extra["models"] = {k: v for k, v in models.describe().items() if k in metrics}
    if rewrites is not None:
        extra["rewrite_sources"] = run.rewrite_sources
    return ScoreReport(n=len(data.items), **by_condition(out_metrics), per_item=list(per_item.values()),
                       failures=list(failures.values()), extra=extra, headline=headline, paired=paired_scores,
                       scales=declared_scales(protocol, metrics))
