"""Closed-question variants of factual QA (docs/protocols/factual.md): true/false tables and binary choice.

Record layouts (musiceval JSON lines; ``--manifest`` fills missing fields from the generate
manifest that :func:`musiceval.vocab.factual_prompts.variant_items` builds):

**true/false** (``musiceval score factual --answers true-false``), one row per (item, asked label)::

    {"item_id": "x#piano", "item": "x", "asked": "piano", "text": "Yes, a piano plays.", "labels": ["piano", "violin"]}

``item`` (default: ``item_id``) names the item the row asks about; ``asked`` is the label of the
question "Is {asked} used in this song?". The table's labels are all labels asked in the file, in
order of first appearance; every item must be asked each once. Answers are read with
:func:`musiceval.extraction.parse_yes_no`; an unclear answer is a wrong cell and counts as "no"
for the set metrics (:func:`musiceval.metrics.sets.true_false_scores`).

**binary choice** (``--answers binary``), one row per item::

    {"item_id": "x", "options": ["violin", "piano"], "text": "It is a piano.", "labels": ["piano"]}

``options`` are the two labels offered ("Between A and B, ...", :func:`musiceval.metrics.sets.binary_choices`
puts the true label first in exactly half the items); exactly one is a true label. An item is
correct when the extracted labels name the true option and not the distractor
(:func:`musiceval.metrics.sets.binary_choice_correct`).

Output (``musiceval score factual --answers ...`` prints ``correct`` as ``metrics`` and ``chance``
beside it; docs/cli.md, "One JSON shape"):

- true/false: ``correct`` = ``{accuracy, n_cells, n_unanswered, precision, recall, f1,
  micro_precision, micro_recall, micro_f1, n}`` (accuracy over cells; P/R/F1 macro over items of
  the labels answered "yes"); ``chance`` = ``{f1, f1_sd, method}`` (yes-sets permuted across items);
- binary: ``correct`` = ``{accuracy, n, n_true_first, n_neither, n_both}``; ``chance`` =
  ``{accuracy: 0.5, p_value}`` (exact one-sided binomial test of the correct count against 1/2).

Bad rows (missing ``asked``/``options``, labels outside the vocabulary, no true option, an item
not asked every label of the table, a duplicate question) are per-item failures.

K sampled answers per item (``musiceval generate --repeats K``; docs/evaluate-your-model.md,
"Sampled answers"): a row carrying ``repeat`` answers the item ``<item>#r<k>`` in its item's group
(its clip), as every answer reader makes it (:func:`musiceval.data.answers.repeated_row`; true/false:
of the row's ``item``), so every repeat is scored and intervals resample clips. The true/false
permutation null moves the K repeats of an item together (:func:`musiceval.metrics.sets.permutation_null_f1`
with ``items``); the binary ``p_value`` is the clustered sign-flip test of ``correct - 1/2`` over
clips (:func:`musiceval.stats.sign_flip_test`) instead of the binomial test, which would count K
answers to one question as K questions. ``repeat_of`` and ``repeat_texts`` of the result feed
:func:`musiceval.suite.repeats.agreement`. Without ``repeat`` rows the output is the same as before.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from musiceval.extraction import Vocabulary, parse_yes_no
from musiceval.metrics.sets import binary_choice_correct, permutation_null_f1, true_false_scores
from musiceval.records import ItemFailure, ItemScores
from musiceval.data.answers import repeated_row, split_labels

ANSWER_KINDS = ("open", "true-false", "binary")


@dataclass
class VariantResult:
    """Per-item scores (Correct condition) by metric, JSON metrics, per-item rows and failures."""

    scores: dict[str, ItemScores]
    metrics: dict
    per_item: list[dict]
    failures: list[ItemFailure]
    #: true/false: the permutation null means of macro F1 (for ``gate.beats_permutation_null``)
    null_f1: np.ndarray | None = None
    #: sampled answers: scored id ``<id>#r<k>`` -> the item it repeats, and each repeat's answer text
    #: (true/false: its answers in table order), for :func:`musiceval.suite.repeats.agreement`
    repeat_of: dict[str, str] = field(default_factory=dict)
    repeat_texts: dict[str, str] = field(default_factory=dict)


def _truth(rec: dict, labels_field: str, vocab: Vocabulary) -> tuple[str, ...]:
    if labels_field not in rec:
        raise ValueError(f"missing labels field {labels_field!r} (pass --labels-field or --manifest)")
    labels = split_labels(rec[labels_field])
    canon = [vocab.canonical(x) for x in labels]
    bad = [x for x, c in zip(labels, canon) if c is None]
    if bad or not labels:
        raise ValueError(f"true label(s) {bad or labels} not in vocabulary {vocab.name!r}; pass a --vocab that has them")
    return tuple(dict.fromkeys(canon))


def _item_scores(metric: str, ids, values, groups, failures) -> ItemScores:
    return ItemScores(metric=metric, ids=tuple(ids), values=np.asarray(values, dtype=float), groups=tuple(groups),
                      condition="correct", failures=tuple(failures))


def score_true_false(records: list[tuple[str, dict]], vocab: Vocabulary, *, labels_field: str = "labels",
                     seed: int = 0, n_permutations: int = 1000, failures: Sequence[ItemFailure] = ()) -> VariantResult:
    """Score a true/false answer file (layout in the module docstring); ``failures`` (earlier
    steps') are counted with the ones found here."""
    failures = list(failures)
    items: dict[str, dict] = {}
    table: dict[str, None] = {}
    repeat_of: dict[str, str] = {}
    for where, rec in records:
        try:
            rec = repeated_row({**rec, "item": rec.get("item") or rec["item_id"]}, "item", repeat_of)
        except ValueError as exc:
            failures.append(ItemFailure(where, f"{where}: bad record: {exc}"))
            continue
        parent = str(rec["item"])
        asked = rec.get("asked")
        label = vocab.canonical(asked) if isinstance(asked, str) else None
        try:
            if label is None:
                raise ValueError(f"field 'asked' ({asked!r}) is missing or not in vocabulary {vocab.name!r}")
            truth = _truth(rec, labels_field, vocab)
        except ValueError as exc:
            failures.append(ItemFailure(parent, f"{where}: {exc}"))
            items.setdefault(parent, {"answers": {}, "truth": (), "group": parent})["error"] = f"{where}: bad row"
            continue
        row = items.setdefault(parent, {"answers": {}, "truth": truth, "group": str(rec.get("group") or parent)})
        row["truth"] = row["truth"] or truth
        if label in row["answers"]:
            row["error"] = f"{where}: {label!r} asked twice"
        row["answers"][label] = parse_yes_no(rec["text"])
        row.setdefault("texts", {})[label] = rec["text"]
        table.setdefault(label)
    labels = list(table)
    ids, answers, truths, groups, texts = [], [], [], [], {}
    for parent, row in items.items():
        missing = [x for x in labels if x not in row["answers"]]
        error = row.get("error") or (f"not asked about {missing}; ask every item every label of the table" if missing else None)
        if error:
            if not error.endswith("bad row"):  # bad rows are already counted
                failures.append(ItemFailure(parent, error))
            continue
        ids.append(parent)
        answers.append(row["answers"])
        truths.append(row["truth"])
        groups.append(row["group"])
        if parent in repeat_of:
            texts[parent] = "\n".join(row["texts"][x] for x in labels)
    if not ids:
        return VariantResult({}, {"correct": {"n": 0}, "chance": {"f1": None}}, [], failures)
    s = true_false_scores(answers, truths, labels)
    cell_acc = [np.mean([a[x] is not None and a[x] == (x in set(t)) for x in labels]) for a, t in zip(answers, truths)]
    yes = [[x for x in labels if a[x] is True] for a in answers]
    # the K repeats of an item move together: a row never meets another repeat's truth (musiceval.stats.permutation)
    of_item = [repeat_of.get(i, i) for i in ids]
    enough = len(set(of_item)) >= 2
    null = permutation_null_f1(yes, [[x for x in t if x in table] for t in truths], n_permutations=n_permutations, seed=seed,
                               items=of_item) if enough else np.array([np.nan])
    together = ", the repeats of an item together" if len(set(of_item)) < len(of_item) else ""
    metrics = {
        "correct": {"accuracy": s["accuracy"], "n_cells": s["n_cells"], "n_unanswered": s["n_unanswered"],
                    **{m: s["macro"][m] for m in ("precision", "recall", "f1")},
                    **{f"micro_{m}": s["micro"][m] for m in ("precision", "recall", "f1")}, "n": len(ids), "labels": labels},
        "chance": {"f1": float(np.mean(null)) if enough else None, "f1_sd": float(np.std(null)) if enough else None,
                   "method": f"permutation of yes-sets across items{together} ({n_permutations}, seed {seed})"},
    }
    scores = {"accuracy": _item_scores("accuracy", ids, cell_acc, groups, failures),
              "f1": _item_scores("f1", ids, s["per_item"]["f1"], groups, failures)}
    per_item = [{"item_id": i, "yes": y, "accuracy": float(a), "f1": float(f)}
                for i, y, a, f in zip(ids, yes, cell_acc, s["per_item"]["f1"])]
    return VariantResult(scores, metrics, per_item, failures, null, repeat_of, texts)


def score_binary(records: list[tuple[str, dict]], vocab: Vocabulary, extract: Callable, *,
                 labels_field: str = "labels", failures: Sequence[ItemFailure] = (), seed: int = 0) -> VariantResult:
    """Score a binary-choice answer file (layout in the module docstring); ``failures`` as in
    :func:`score_true_false`; ``seed`` seeds the sign-flip test of sampled answers over more than 16 clips."""
    from musiceval.stats import binomial_test_greater, sign_flip_test

    failures = list(failures)
    rows = []
    repeat_of: dict[str, str] = {}
    for where, rec in records:
        try:
            rec = repeated_row(rec, "item_id", repeat_of)
        except ValueError as exc:
            failures.append(ItemFailure(where, f"{where}: bad record: {exc}"))
            continue
        item_id = rec["item_id"]
        options = rec.get("options")
        try:
            if not (isinstance(options, list) and len(options) == 2 and all(isinstance(o, str) for o in options)):
                raise ValueError(f"field 'options' must be a list of two labels, got {options!r}")
            canon = [vocab.canonical(o) for o in options]
            if None in canon or canon[0] == canon[1]:
                raise ValueError(f"options {options} must be two different labels of vocabulary {vocab.name!r}")
            truth = _truth(rec, labels_field, vocab)
            true_opts = [k for k, o in enumerate(canon) if o in truth]
            if len(true_opts) != 1:
                raise ValueError(f"exactly one of the options {options} must be a true label (true: {list(truth)})")
        except ValueError as exc:
            failures.append(ItemFailure(item_id, f"{where}: {exc}"))
            continue
        k = true_opts[0]
        rows.append((item_id, rec["text"], canon[k], canon[1 - k], k == 0, str(rec.get("group") or item_id)))
    distinct = list(dict.fromkeys(r[1] for r in rows))
    extracted = dict(zip(distinct, extract(distinct)))
    ids, values, groups, per_item = [], [], [], []
    neither = both = 0
    for item_id, text, true_label, distractor, _, group in rows:
        labels, reason = extracted[text]
        if labels is None:
            failures.append(ItemFailure(item_id, f"extraction failed: {reason}"))
            continue
        named = {true_label, distractor} & set(labels)
        neither += not named
        both += len(named) == 2
        ids.append(item_id)
        values.append(binary_choice_correct(labels, true_label, distractor))
        groups.append(group)
        per_item.append({"item_id": item_id, "labels": list(labels), "true": true_label, "distractor": distractor,
                         "accuracy": values[-1]})
    k, scored = int(sum(values)), set(ids)
    chance: dict = {"accuracy": 0.5, "p_value": binomial_test_greater(k, len(ids), 0.5) if ids else None}
    if repeat_of and ids:  # K answers to one question are not K questions: whole clips flip, the repeats in them together
        chance["p_value"] = sign_flip_test(np.asarray(values) - 0.5, groups=groups, seed=seed)
        chance["method"] = "clustered sign-flip test of correct - 1/2 over clips, the repeats of an item together"
    metrics = {
        "correct": {"accuracy": k / len(ids) if ids else None, "n": len(ids),
                    "n_true_first": sum(r[4] for r in rows if r[0] in scored), "n_neither": neither, "n_both": both},
        "chance": chance,
    }
    texts = {r[0]: r[1] for r in rows if r[0] in repeat_of}
    return VariantResult({"accuracy": _item_scores("accuracy", ids, values, groups, failures)}, metrics, per_item, failures,
                         repeat_of=repeat_of, repeat_texts=texts)
