"""``musiceval score factual``: factual QA (SPEC section 2) on recorded answers.

::

    musiceval score factual --format {musiceval,dasheng,cmi-bench} FILE --vocab VOCAB \
        [--labels-field F] [--extractor {rules,llm}] [--conditions correct,random] --json

prints ``{"protocol": "factual", "n": .., "n_failed": .., "metrics": {"correct": {precision, recall,
f1, accuracy, micro_*}, "random": {..}, "chance": {"f1": ..}}, ...}``.

Formats: ``musiceval`` (JSON lines ``{item_id, prompt, text, labels, [condition], [group]}``;
``labels`` a list or a comma-separated string, renamed with ``--labels-field``), ``dasheng``
(:mod:`musiceval.data.dasheng`, labels in ``label``), ``cmi-bench`` (:mod:`musiceval.data.cmibench`,
labels in ``correct_answer``, comma-separated for multi-label tasks).

- **correct**: each answer's extracted labels against its item's true labels;
- **random**: for recorded answers to one shared prompt, the answer the model gave for *another*
  clip with the same prompt (a seeded derangement, :func:`musiceval.conditions.random_recorded_responses`),
  scored against this item's labels; a musiceval file may carry its own ``random`` rows instead;
- **chance**: the mean macro F1 when the correct-condition predictions are permuted across
  items (label marginals kept, item link broken): :func:`musiceval.metrics.sets.permutation_null_f1`.

P/R/F1 are macro over items (per-item then averaged), ``micro_*`` from summed counts; accuracy is
exact set match (for single-label tasks: the true label and nothing else). Empty cases follow
:mod:`musiceval.metrics.sets`. Items whose true label is outside the vocabulary, whose answer the
LLM extractor could not extract, or that have no Random partner are per-item failures.

:func:`load_factual` and :func:`score_factual` are the library entry points the evals use.
"""
from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from musiceval.extraction import Vocabulary, extract_labels, load_vocabulary
from musiceval.metrics.sets import per_label_scores, permutation_null_f1, set_scores
from musiceval.records import ItemFailure, ItemScores
from musiceval.scoring import InputError, Scorer, ScoreOutput, register_scorer

FORMATS = ("musiceval", "dasheng", "cmi-bench")
DEFAULT_LABELS_FIELD = {"musiceval": "labels", "dasheng": "label", "cmi-bench": "correct_answer"}
METRICS = ("precision", "recall", "f1", "accuracy")


@dataclass
class FactualSet:
    """Recorded answers with their true labels, aligned by position."""

    ids: list[str]
    prompts: list[str]
    texts: list[str]
    truths: list[tuple[str, ...]]
    groups: list[str]
    failures: list[ItemFailure] = field(default_factory=list)
    #: explicit Random-condition answers by item id (musiceval files with ``condition: random`` rows)
    random_texts: dict[str, str] | None = None

    @property
    def n(self) -> int:
        return len(self.ids)


def _split_labels(value) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(x.strip() for x in value.split(",") if x.strip())
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return tuple(value)
    raise ValueError(f"labels must be a string or a list of strings, got {type(value).__name__}")


def _load_musiceval(path: Path, labels_field: str) -> FactualSet:
    data = FactualSet([], [], [], [], [])
    random: dict[str, str] = {}
    for lineno, raw in enumerate(path.read_bytes().splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{path.name}:{lineno}"
        try:
            rec = json.loads(raw.decode("utf-8"))
            if not isinstance(rec, dict) or not isinstance(rec.get("text"), str) or "item_id" not in rec:
                raise ValueError("expected an object with 'item_id' and a string 'text'")
            if rec.get("condition", "correct") == "random":
                random[str(rec["item_id"])] = rec["text"]
                continue
            if labels_field not in rec:
                raise ValueError(f"missing labels field {labels_field!r} (pass --labels-field)")
            labels = _split_labels(rec[labels_field])
        except UnicodeDecodeError as exc:
            data.failures.append(ItemFailure(where, f"not UTF-8 ({exc.reason} at byte {exc.start})"))
            continue
        except (json.JSONDecodeError, ValueError) as exc:
            data.failures.append(ItemFailure(where, f"bad record: {exc}"))
            continue
        data.ids.append(str(rec["item_id"]))
        data.prompts.append(str(rec.get("prompt") or ""))
        data.texts.append(rec["text"])
        data.truths.append(labels)
        data.groups.append(str(rec.get("group") or rec["item_id"]))
    data.random_texts = random or None
    return data


def load_factual(path: str | Path, fmt: str, labels_field: str | None = None) -> FactualSet:
    """Read recorded factual answers in one of :data:`FORMATS`; bad records become failures."""
    path = Path(path)
    if fmt not in FORMATS:
        raise InputError(f"{path}: unknown --format {fmt!r}; one of {', '.join(FORMATS)}")
    if not path.is_file():
        raise InputError(f"{path}: file not found; pass an existing recorded-answers file")
    labels_field = labels_field or DEFAULT_LABELS_FIELD[fmt]
    try:
        if fmt == "musiceval":
            return _load_musiceval(path, labels_field)
        if fmt == "dasheng":
            from musiceval.data.dasheng import load_dasheng_jsonl

            rec = load_dasheng_jsonl(path, labels_field=labels_field)
            return FactualSet([i.id for i in rec.items], [r.prompt for r in rec.responses], [r.text for r in rec.responses],
                              [i.labels for i in rec.items], [i.group or i.id for i in rec.items], list(rec.failures))
        from musiceval.data.cmibench import load_outputs

        out = load_outputs(path)
        if labels_field != "correct_answer":
            raise InputError(f"{path}: cmi-bench outputs carry their labels in 'correct_answer'; drop --labels-field")
        return FactualSet([r.item_id for r in out.records], [r.question for r in out.records], [r.response for r in out.records],
                          [_split_labels(r.correct_answer) for r in out.records], [r.group for r in out.records], list(out.failures))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 ({exc.reason}); re-encode the file as UTF-8") from exc
    except ValueError as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{path}: {exc}") from exc


def rule_extractor(vocab: Vocabulary) -> Callable[[Sequence[str]], list[tuple[tuple[str, ...] | None, str | None]]]:
    """``texts -> [(labels, None)]`` with the deterministic rule extractor."""
    return lambda texts: [(extract_labels(t, vocab).labels, None) for t in texts]


def llm_extractor(vocab: Vocabulary, *, model: str, cache_dir: str | Path | None = None, question: str | None = None):
    """``texts -> [(labels or None, failure reason or None)]`` with the LLM extractor."""
    from musiceval.llm.cache import JSONCache
    from musiceval.llm.client import make_client
    from musiceval.llm.extract import LLMExtractor

    cache = JSONCache(cache_dir) if cache_dir else None
    extractor = LLMExtractor(client=make_client(), vocab=vocab, model=model, cache=cache, question=question)

    def run(texts):
        return [(r.labels, None) if r.failure is None else (None, r.failure) for r in extractor.extract_many(texts)]

    run.extractor = extractor  # type: ignore[attr-defined]
    return run


@dataclass
class FactualResult:
    """Per-condition per-item scores, the permutation chance level and the JSON metrics."""

    scores: dict[str, dict[str, ItemScores]]  # condition -> metric -> ItemScores
    predictions: dict[str, dict[str, tuple[str, ...]]]  # condition -> item id -> labels
    null_f1: np.ndarray
    metrics: dict
    per_label: dict
    failures: list[ItemFailure]


def _condition_scores(condition: str, ids, preds, truths, groups, failures) -> tuple[dict[str, ItemScores], dict]:
    s = set_scores(preds, truths) if ids else None
    out = {}
    for metric in METRICS:
        values = s["per_item"][metric] if s else np.zeros(0)
        out[metric] = ItemScores(metric=metric, ids=tuple(ids), values=values, groups=tuple(groups), condition=condition,
                                 failures=tuple(failures))
    summary = {m: (s["macro"][m] if s else None) for m in METRICS}
    summary.update({f"micro_{m}": (s["micro"][m] if s else None) for m in ("precision", "recall", "f1")})
    summary["n"] = len(ids)
    return out, summary


def score_factual(data: FactualSet, vocab: Vocabulary, extract: Callable | None = None, *,
                  conditions: Sequence[str] = ("correct", "random"), seed: int = 0, n_permutations: int = 1000) -> FactualResult:
    """Extract labels, score each condition per item, and estimate the permutation chance level."""
    unknown = [c for c in conditions if c not in ("correct", "random")]
    if unknown or "correct" not in conditions:
        raise InputError(f"--conditions must include 'correct' and may add 'random' (got {', '.join(conditions)})")
    extract = extract or rule_extractor(vocab)
    failures = list(data.failures)
    truths: dict[str, tuple[str, ...]] = {}
    for i, labels in zip(data.ids, data.truths):
        canon = [vocab.canonical(x) for x in labels]
        bad = [x for x, c in zip(labels, canon) if c is None]
        if bad:
            failures.append(ItemFailure(i, f"true label(s) {bad} not in vocabulary {vocab.name!r}; pass a --vocab that has them"))
        elif not labels:
            failures.append(ItemFailure(i, "item has no true labels"))
        else:
            truths[i] = tuple(dict.fromkeys(canon))
    texts = dict(zip(data.ids, data.texts))
    partner: dict[str, str] = {}
    unpaired: list[str] = []
    if "random" in conditions:
        if data.random_texts is not None:
            partner = {i: t for i, t in data.random_texts.items() if i in texts}
        else:
            from musiceval.conditions import random_recorded_responses

            rr = random_recorded_responses(data.ids, data.prompts, data.texts, seed, clips=data.groups) if data.n >= 2 else None
            partner = dict(rr.draws[0]) if rr else {}
        unpaired = [i for i in data.ids if i not in partner]
    distinct = list(dict.fromkeys([*texts.values(), *partner.values()]))
    extracted = dict(zip(distinct, extract(distinct)))
    group_of = dict(zip(data.ids, data.groups))

    scores, predictions, metrics = {}, {}, {}
    for condition in conditions:
        source = texts if condition == "correct" else partner
        ids, preds, cond_failures = [], [], []
        for i in data.ids:
            if i not in truths:
                continue
            if i not in source:
                cond_failures.append(ItemFailure(i, "no other item shares this prompt: no Random answer"))
                continue
            labels, reason = extracted[source[i]]
            if labels is None:
                cond_failures.append(ItemFailure(i, f"extraction failed: {reason}"))
                continue
            ids.append(i)
            preds.append(labels)
        scores[condition], metrics[condition] = _condition_scores(
            condition, ids, preds, [truths[i] for i in ids], [group_of[i] for i in ids], cond_failures)
        predictions[condition] = dict(zip(ids, preds))
        if condition == "correct":  # Random-condition gaps are counted in metrics["random"]
            failures.extend(cond_failures)
    correct = predictions["correct"]
    ids = list(correct)
    null = (permutation_null_f1([correct[i] for i in ids], [truths[i] for i in ids], n_permutations=n_permutations, seed=seed)
            if len(ids) >= 2 else np.array([np.nan]))
    metrics["chance"] = {"f1": float(np.mean(null)) if len(ids) >= 2 else None,
                         "f1_sd": float(np.std(null)) if len(ids) >= 2 else None,
                         "method": f"permutation of predictions across items ({n_permutations}, seed {seed})"}
    if "random" in conditions:
        metrics["random"]["n_unpaired"] = len(unpaired)
    per_label = per_label_scores([correct[i] for i in ids], [truths[i] for i in ids], labels=list(vocab.labels))
    return FactualResult(scores, predictions, null, metrics, dict(per_label), failures)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vocab", required=True, help="closed vocabulary: nsynth, gtzan, fma-top, musicnet-instruments, "
                        "musicnet-composers, or a JSON/text vocabulary FILE")
    parser.add_argument("--labels-field", default=None, help="field holding the true labels (default: labels / label / correct_answer by format)")
    parser.add_argument("--extractor", choices=("rules", "llm"), default="rules", help="label extractor (default: rules, offline)")
    parser.add_argument("--conditions", default="correct,random", help="comma-separated: correct[,random] (default: %(default)s)")
    parser.add_argument("--llm-model", default="gpt-4.1-mini", help="extractor model for --extractor llm (OPENAI_API_KEY / OPENAI_BASE_URL)")
    parser.add_argument("--llm-cache", default=os.environ.get("MUSICEVAL_LLM_CACHE"), help="directory caching extractor results")
    parser.add_argument("--n-permutations", type=int, default=1000, help="permutations for the chance level (default: %(default)s)")


def _score(args: argparse.Namespace) -> ScoreOutput:
    if not getattr(args, "file", None):
        raise InputError("score factual: no FILE given; pass recorded answers (see --format)")
    try:
        vocab = load_vocabulary(args.vocab)
    except (FileNotFoundError, ValueError) as exc:
        raise InputError(f"--vocab: {exc}") from exc
    data = load_factual(args.file, args.format, args.labels_field)
    if data.n == 0:
        raise InputError(f"{args.file}: no readable records ({len(data.failures)} bad); check --format {args.format}")
    extract = (llm_extractor(vocab, model=args.llm_model, cache_dir=args.llm_cache) if args.extractor == "llm"
               else rule_extractor(vocab))
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    result = score_factual(data, vocab, extract, conditions=conditions, seed=args.seed, n_permutations=args.n_permutations)
    correct = result.scores["correct"]
    per_item = [{"item_id": i, "labels": list(result.predictions["correct"][i]),
                 **{m: float(correct[m].values[k]) for m in METRICS}} for k, i in enumerate(correct["f1"].ids)]
    failures = [{"item_id": f.item_id, "error": f.reason} for f in result.failures]
    extra = {"vocab": vocab.name, "extractor": args.extractor, "format": args.format, "per_label": result.per_label}
    if args.extractor == "llm":
        extra["llm_calls"] = extract.extractor.n_calls
    return ScoreOutput("factual", correct["f1"].n, result.metrics, per_item + failures, failures, extra=extra)


register_scorer(Scorer(
    name="factual", configure=_configure, score=_score,
    help="factual QA: labels extracted from answers vs true labels (P/R/F1, accuracy), Random condition, permutation chance",
    formats=FORMATS,
))
