"""Factual QA on recorded answers (docs/protocols/factual.md): labels extracted from each answer and scored
against the item's true labels. The engine of :class:`musiceval.protocols.factual.FactualProtocol`
and of ``musiceval score factual`` (:mod:`musiceval.protocols.factual.score`, which documents the
conditions, options and output).

:func:`load_factual` (a file -> AnswerSet), :func:`factual_set` (-> the engine's input, the Random
answers in it: the file's, or derived) and :func:`score_factual` are the library entry points:
``score_factual(factual_set(load_factual(path, "dasheng")), load_vocabulary("nsynth"))``;
:func:`factual_sets` builds the Correct set and one per recorded control in one pass, before any
scoring.
:func:`rule_extractor` and :func:`llm_extractor` build the two extractors, and
:func:`extractor_agreement` compares them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from musiceval.data.answers import AnswerSet
from musiceval.data.errors import InputError
from musiceval.data.factual_files import FORMATS, load_factual
from musiceval.exclusions import NO_RANDOM_ROW, NO_SAME_PROMPT_PARTNER, Exclusion, exclude
from musiceval.extraction import Vocabulary, extract_labels
from musiceval.metrics.sets import item_labels, label_set_scores, per_label_scores, permutation_null_f1
from musiceval.protocols.pairing import orphans
from musiceval.records import ItemFailure, ItemScores

__all__ = ["FORMATS", "FactualResult", "FactualSet", "extractor_agreement", "factual_set", "factual_sets", "llm_extractor",
           "load_factual", "rule_extractor", "score_factual"]
CHUNK_RULES = ("any", "majority")

Extract = Callable[[Sequence[str]], list]  # texts -> [(labels or None, failure reason or None)]


@dataclass
class FactualSet:
    """Recorded answers with their true labels, aligned by position.

    ``texts[k]`` is one answer (``str``) or a tuple of chunk answers; so are ``random_texts``'s
    values: the Random answer scored for each item id, the file's Random rows or, with
    ``random_derived``, the answer to another clip with the same prompt (:func:`factual_set`);
    None: no Random answers.
    """

    ids: list[str]
    prompts: list[str]
    texts: list
    truths: list[tuple[str, ...]]
    groups: list[str]
    failures: list[ItemFailure] = field(default_factory=list)
    random_texts: dict | None = None
    #: the id of a sampled repeat (``<id>#r<k>``) -> the item it repeats (:attr:`AnswerSet.repeat_of`)
    repeat_of: dict[str, str] = field(default_factory=dict)
    #: ``random_texts`` were derived from the answers to other clips, the file has no Random rows
    random_derived: bool = False

    @property
    def n(self) -> int:
        return len(self.ids)


def factual_sets(answers: AnswerSet, controls: Sequence[str] = (), *, seed: int = 0) -> dict[str, FactualSet]:
    """``correct`` and each of ``controls`` (recorded conditions such as ``noise``) -> its
    :class:`FactualSet` (:func:`factual_set`); a control no item was answered under is left out."""
    sets = {condition: factual_set(answers, condition, seed=seed) for condition in ("correct", *controls)}
    return {condition: data for condition, data in sets.items() if condition == "correct" or data.n}


def factual_set(answers: AnswerSet, condition: str = "correct", *, seed: int = 0) -> FactualSet:
    """The answer set's items and their ``condition`` answers as the engine's :class:`FactualSet`
    (chunk answers joined into a tuple; when ``condition`` is ``correct``, ``random_texts`` from the
    Random rows, or without any derived with ``seed``: the answer the model gave for another clip
    with the same prompt, a seeded derangement by
    :func:`musiceval.conditions.random_recorded_responses`); a failure per item with no answer under
    ``condition``.

    A generated set (:meth:`musiceval.generate.GenerationResult.answer_set`) records its failed
    requests as failures named ``<condition>[ chunk k]: ...``: an answer missing one of the
    ``meta["n_chunks"]`` chunks it declares is no answer, an item whose request failed is not
    counted a second time, and a set asked under Random keeps its Random rows even when every one
    failed (``random_texts`` empty, never derived)."""
    by_item, prompts = _chunk_answers(answers, condition)
    random = _chunk_answers(answers, "random")[0] if condition == "correct" else {}
    data = FactualSet([], [], [], [], [], list(answers.failures) + orphans(answers), repeat_of=dict(answers.repeat_of))
    failed = {f.item_id for f in answers.failures if f.under(condition)}

    def text(chunks: dict[int, str]):
        return chunks[0] if len(chunks) == 1 and 0 in chunks else tuple(chunks[k] for k in sorted(chunks))

    for item in answers.items:
        if item.id not in by_item:
            if condition == "correct" and item.id not in failed:
                data.failures.append(ItemFailure(item.id, "no correct-condition answer"))
            continue
        data.ids.append(item.id)
        data.prompts.append(prompts[item.id] or item.question)
        data.texts.append(text(by_item[item.id]))
        data.truths.append(tuple(item.labels))
        data.groups.append(item.group or item.id)
    scored = set(data.ids)
    random_texts = {i: text(c) for i, c in random.items() if i in scored}
    asked_random = condition == "correct" and any(f.under("random") for f in answers.failures)
    data.random_texts = random_texts if random_texts or asked_random else None
    if condition == "correct" and data.random_texts is None:
        data.random_texts = _same_prompt_partners(data, seed)
        data.random_derived = True
    return data


def _same_prompt_partners(data: FactualSet, seed: int) -> dict:
    """Item id -> the answer to another clip with the same prompt (every item's, where its prompt
    group allows one; none with fewer than two items)."""
    from musiceval.conditions import random_recorded_responses

    if data.n < 2:
        return {}
    return dict(random_recorded_responses(data.ids, data.prompts, data.texts, seed, clips=data.groups).draws[0])


def _chunk_answers(answers: AnswerSet, condition: str) -> tuple[dict[str, dict[int, str]], dict[str, str]]:
    """Item id -> its ``condition`` answers by chunk index (only answers with every chunk their
    ``meta["n_chunks"]`` declares), and item id -> the prompt it was asked."""
    chunks: dict[str, dict[int, str]] = {}
    declared: dict[str, int] = {}
    prompts: dict[str, str] = {}
    for r in answers.responses:
        if r.condition == condition:
            meta = r.meta or {}
            chunks.setdefault(r.item_id, {})[int(meta.get("chunk", 0))] = r.text
            if meta.get("n_chunks") is not None:
                declared[r.item_id] = int(meta["n_chunks"])
            prompts.setdefault(r.item_id, r.prompt)
    complete = {i: c for i, c in chunks.items() if i not in declared or sorted(c) == list(range(declared[i]))}
    return complete, prompts


def rule_extractor(vocab: Vocabulary) -> Extract:
    """``texts -> [(labels, None)]`` with the deterministic rule extractor."""
    return lambda texts: [(extract_labels(t, vocab).labels, None) for t in texts]


def llm_extractor(vocab: Vocabulary, *, model: str, cache_dir=None, question: str | None = None, client=None) -> Extract:
    """``texts -> [(labels or None, failure reason or None)]`` with the LLM extractor; results are
    kept in memory, so scoring and ``--agreement`` send each answer once."""
    from musiceval.llm.cache import JSONCache
    from musiceval.llm.client import make_client
    from musiceval.llm.extract import LLMExtractor

    extractor = LLMExtractor(client=client or make_client(), vocab=vocab, model=model,
                             cache=JSONCache(cache_dir) if cache_dir else None, question=question)
    done: dict[str, tuple] = {}

    def run(texts):
        from musiceval import progress

        todo = [t for t in dict.fromkeys(texts) if t not in done]
        with progress.bar(len(todo), desc=f"factual {model} extraction", unit="answer") as bar:
            for t, r in zip(todo, extractor.extract_many(todo)):
                done[t] = (r.labels, None) if r.failure is None else (None, r.failure)
                bar.update(1)
        return [done[t] for t in texts]

    run.extractor = extractor  # type: ignore[attr-defined]
    return run


def _chunks(text) -> tuple[str, ...]:
    return (text,) if isinstance(text, str) else tuple(text)


@dataclass
class FactualResult:
    """Per-condition per-item scores, the permutation chance level and the JSON metrics."""

    scores: dict[str, dict[str, ItemScores]]  # condition -> metric -> ItemScores
    predictions: dict[str, dict[str, tuple[str, ...]]]  # condition -> item id -> labels
    null_f1: np.ndarray
    metrics: dict
    per_label: dict
    failures: list[ItemFailure]
    #: items left out by a named rule (no Random partner), counted, not failures
    excluded: list[Exclusion] = field(default_factory=list)
    #: item id -> the Random answer scored for it (chunk answers as a tuple): the file's random row
    #: or, derived, the answer to another clip with the same prompt; empty without Random
    random_partner: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _truths(data: FactualSet, vocab: Vocabulary, failures: list[ItemFailure]) -> dict[str, tuple[str, ...]]:
    truths = {}
    for i, labels in zip(data.ids, data.truths):
        canon = [vocab.canonical(x) for x in labels]
        bad = [x for x, c in zip(labels, canon) if c is None]
        if bad:
            failures.append(ItemFailure(i, f"true label(s) {bad} not in vocabulary {vocab.name!r}; pass a --vocab that has them"))
        elif not labels:
            failures.append(ItemFailure(i, "item has no true labels"))
        else:
            truths[i] = tuple(dict.fromkeys(canon))
    return truths


def score_factual(data: FactualSet, vocab: Vocabulary, extract: Extract | None = None, *,
                  conditions: Sequence[str] = ("correct", "random"), seed: int = 0, n_permutations: int = 1000,
                  chunks: str | None = None, hierarchy: Mapping[str, str | None] | None = None) -> FactualResult:
    """Extract labels, score each condition per item, and estimate the permutation chance level.

    ``conditions`` are ``correct`` (``data.texts``) and optionally ``random`` (``data.random_texts``,
    as :func:`factual_set` found or derived them; an item without one is excluded from Random by
    the rule ``no_random_partner``). ``seed`` seeds the permutation null. ``chunks``
    (``"any"``/``"majority"``) aggregates chunked answers; ``hierarchy`` (child -> parent labels of
    the vocabulary) adds the "same tree" scores (see the module docstring). In one downward pass:
    answers to labels (``extract``), labels to an item's prediction
    (:func:`musiceval.metrics.sets.item_labels`), predictions to scores
    (:func:`musiceval.metrics.sets.label_set_scores`).
    """
    unknown = [c for c in conditions if c not in ("correct", "random")]
    if unknown or "correct" not in conditions:
        raise InputError(f"--conditions must include 'correct' and may add 'random' (got {', '.join(conditions)})")
    if chunks not in (None, *CHUNK_RULES):
        raise InputError(f"--chunks must be one of {', '.join(CHUNK_RULES)}, got {chunks!r}")
    extract = extract or rule_extractor(vocab)
    failures = list(data.failures)
    truths = _truths(data, vocab, failures)
    texts = {i: _chunks(t) for i, t in zip(data.ids, data.texts)}
    partner: dict[str, tuple[str, ...]] = {}
    unpaired: list[str] = []
    if "random" in conditions:
        partner = {i: _chunks(t) for i, t in (data.random_texts or {}).items() if i in texts}
        unpaired = [i for i in data.ids if i not in partner]
    distinct = list(dict.fromkeys(c for t in [*texts.values(), *partner.values()] for c in t))
    extracted = dict(zip(distinct, extract(distinct)))
    group_of = dict(zip(data.ids, data.groups))

    scores, predictions, metrics = {}, {}, {}
    for condition in conditions:
        source = texts if condition == "correct" else partner
        ids, preds, cond_failures = [], [], []
        for i in data.ids:
            if i not in truths:
                continue
            if i not in source:  # no Random partner: left out of Correct vs Random by rule (``excluded``)
                continue
            labels, reason = item_labels([extracted[c] for c in source[i]], chunks)
            if labels is None:
                cond_failures.append(ItemFailure(i, reason))  # type: ignore[arg-type]
                continue
            ids.append(i)
            preds.append(labels)
        if condition == "correct":  # every failure counts against Correct; Random gaps in metrics["random"]
            failures.extend(cond_failures)
        per_item, metrics[condition] = label_set_scores(preds, [truths[i] for i in ids], hierarchy=hierarchy)
        scored = dict(ids=tuple(ids), groups=tuple(group_of[i] for i in ids), condition=condition,
                      failures=tuple(failures if condition == "correct" else cond_failures))
        scores[condition] = {m: ItemScores(metric=m, values=v, **scored) for m, v in per_item.items()}
        predictions[condition] = dict(zip(ids, preds))
    correct = predictions["correct"]
    ids = sorted(correct)  # item-id order: the permutation null does not move with the file's line order
    # the K repeats of an item move together: a row never meets another repeat's truth (musiceval.stats.permutation)
    items = [data.repeat_of.get(i, i) for i in ids]
    enough = len(set(items)) >= 2
    null = (permutation_null_f1([correct[i] for i in ids], [truths[i] for i in ids], n_permutations=n_permutations, seed=seed,
                                items=items) if enough else np.array([np.nan]))
    together = ", the repeats of an item together" if len(set(items)) < len(items) else ""
    metrics["chance"] = {"f1": float(np.mean(null)) if enough else None, "f1_sd": float(np.std(null)) if enough else None,
                         "method": f"permutation of predictions across items{together} ({n_permutations}, seed {seed})"}
    if "random" in conditions:
        metrics["random"]["n_unpaired"] = len(unpaired)
    per_label = per_label_scores([correct[i] for i in ids], [truths[i] for i in ids], labels=list(vocab.labels))
    excluded = exclude("no_random_partner", [i for i in unpaired if i in correct], conditions=("random",),
                       detail=NO_SAME_PROMPT_PARTNER if data.random_derived else NO_RANDOM_ROW)
    return FactualResult(scores, predictions, null, metrics, dict(per_label), failures, excluded, partner)


def extractor_agreement(data: FactualSet, vocab: Vocabulary, a: Extract, b: Extract, *, chunks: str | None = None) -> dict:
    """Agreement of two extractors on each item's Correct answer (chunked answers aggregated with
    ``chunks``): :func:`musiceval.metrics.agreement.agreement_summary` plus ``n_failed`` (items
    either extractor could not extract, left out) and ``failures``."""
    from musiceval.metrics.agreement import agreement_summary

    answers = {i: _chunks(t) for i, t in zip(data.ids, data.texts)}
    distinct = list(dict.fromkeys(c for t in answers.values() for c in t))
    ea, eb = dict(zip(distinct, a(distinct))), dict(zip(distinct, b(distinct)))
    la, lb, failures = [], [], []
    for i, t in answers.items():
        (pa, ra), (pb, rb) = item_labels([ea[c] for c in t], chunks), item_labels([eb[c] for c in t], chunks)
        if pa is None or pb is None:
            failures.append(ItemFailure(i, ra or rb))
            continue
        la.append(pa)
        lb.append(pb)
    return {**agreement_summary(la, lb, list(vocab.labels)), "n_failed": len(failures), "failures": failures}
