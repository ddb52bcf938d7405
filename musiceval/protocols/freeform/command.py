"""``musiceval score freeform``: free-form QA (protocol 1) from a file of recorded answers.

The conditions, metrics and their rules are those of :mod:`musiceval.protocols.freeform.engine`; the flags
select them (``--metrics``, ``--conditions``, ``--rewrites``, ``--random-draws``, ``--data-dir``,
``--cache-dir``).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from musiceval.commands import InputError, Scorer, ScoreOutput, by_condition, excluded_entry, register_scorer
from musiceval.conditions import load_rewrites
from musiceval.ranges import AT_LEAST_ONE, NON_NEGATIVE_INT, arg
from musiceval.protocols.freeform.engine import EMBEDDING_METRICS, FREEFORM_CONDITIONS, METRICS


def _split(value: str, allowed: Sequence[str], flag: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise InputError(f"{flag}: unknown {bad or 'empty list'}; choose from {','.join(allowed)}")
    return names


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metrics", default="bleu,bleu4,meteor,rouge_l,cider,sentence_cosine",
                        help=f"comma-separated, from {','.join(METRICS)} and any metric registered with "
                             "musiceval.metrics.registry.register_metric")
    parser.add_argument("--conditions", default="correct,random", help=f"comma-separated, from {','.join(FREEFORM_CONDITIONS)}")
    parser.add_argument("--random-draws", type=arg(AT_LEAST_ONE), default=1, help="independent Random derangements, averaged per item")
    parser.add_argument("--rewrites", help="Skyline/Adversarial JSONL (fixtures/freeform/rewrites_handwritten.jsonl layout)")
    parser.add_argument("--sentence-encoder", default="minilm", help="encoder of sentence_cosine (minilm, st:<dir>)")
    parser.add_argument("--clap", default=None, help="CLAP hub id, directory or LAION .pt (default $MUSICEVAL_CLAP or laion/larger_clap_music)")
    parser.add_argument("--bertscore-model", default="minilm", help="bert-score model dir or hub id (minilm = bundled all-MiniLM-L6-v2)")
    parser.add_argument("--bertscore-layers", type=arg(NON_NEGATIVE_INT), default=6)
    parser.add_argument("--bertscore-baseline", default=None, help="TSV (LAYER,P,R,F) for baseline rescaling")
    from musiceval.cache_dir import add_cache_dir_argument

    add_cache_dir_argument(parser, "embedding cache (DIR/embeddings)")
    parser.add_argument("--data-dir", default=None, help="root of the items' 'audio' paths for clap_audio (default: FILE's folder)")


def score(args: argparse.Namespace) -> ScoreOutput:
    from musiceval.metrics.registry import metric_names

    metrics = _split(args.metrics, metric_names("freeform"), "--metrics")
    conditions = _split(args.conditions, FREEFORM_CONDITIONS + ("text_only", "silence"), "--conditions")
    if args.random_draws < 1:
        raise InputError("--random-draws must be >= 1")
    from musiceval.protocols import ProtocolSettings
    from musiceval.protocols.freeform import FreeformProtocol
    from musiceval.cache_dir import EMBEDDINGS, cache_path
    from musiceval.commands import load_protocol_answers

    data = load_protocol_answers(args.file, args.format, "freeform")
    if not data.items:
        raise InputError(f"{args.file}: no scorable item ({len(data.failures)} failures; first: "
                         f"{data.failures[0].reason if data.failures else 'empty file'})")
    rewrites = None
    if any(c in ("skyline", "adversarial") for c in conditions):
        if not args.rewrites:
            raise InputError("--conditions skyline/adversarial need --rewrites FILE (e.g. fixtures/freeform/rewrites_handwritten.jsonl)")
        try:
            rewrites = load_rewrites(args.rewrites)
        except (ValueError, FileNotFoundError) as exc:
            raise InputError(str(exc)) from None
    data_dir = Path(args.data_dir) if args.data_dir else Path(args.file).parent
    if "clap_audio" in metrics and not data_dir.is_dir():
        raise InputError(f"--data-dir {str(data_dir)!r} is not a directory; clap_audio reads the items' 'audio' files from it")
    protocol = FreeformProtocol.from_answers(data, ProtocolSettings(seed=args.seed, options={
        "metrics": metrics, "rewrites": rewrites, "random_draws": args.random_draws, "sentence_encoder": args.sentence_encoder,
        "clap": args.clap, "bertscore_model": args.bertscore_model, "bertscore_layers": args.bertscore_layers,
        "bertscore_baseline": args.bertscore_baseline, "cache_dir": str(cache_path(args, EMBEDDINGS)), "data_dir": data_dir}))
    run, models = protocol.evaluation, protocol.evaluation.models
    missing = [c for c in conditions if c not in run.texts]
    if missing:
        raise InputError(f"{args.file}: no responses for condition(s) {missing}; record them (condition field) or drop them from --conditions")
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
    extra: dict[str, Any] = {"n_per_condition": n_scored, "seed": args.seed, "format": data.format, "model": protocol.model,
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
    return ScoreOutput(protocol="freeform", n=len(data.items), **by_condition(out_metrics), per_item=list(per_item.values()),
                       failures=list(failures.values()), extra=extra, headline=headline, paired=paired_scores)


register_scorer(Scorer(name="freeform", configure=configure, score=score,
                       help="free-form QA: BLEU, METEOR, ROUGE-L, CIDEr-D, BERTScore, CLAPText, CLAPAudio, sentence cosine per condition",
                       formats=("musiceval", "dasheng")))
