"""Set-based metrics for factual QA: labels extracted from an answer against ground-truth labels.

Protocol 2 of the spec (the factual QA framework of the CLAPText paper): a Music LM answers a
factual question, an extractor maps the answer to a list of labels from a closed vocabulary, and the
predicted set is compared with the true set.

Conventions
-----------
Every item is a pair ``(pred, true)`` of label collections; duplicates are ignored (sets).

* precision ``P = |pred & true| / |pred|``, recall ``R = |pred & true| / |true|``,
  ``F1 = 2|pred & true| / (|pred| + |true|)`` (the harmonic mean of P and R).
* Empty cases (documented choice, see :func:`item_prf`):

  - empty prediction, non-empty truth (the model named nothing from the vocabulary):
    P = R = F1 = 0. Abstaining earns no precision.
  - non-empty prediction, empty truth: P = R = F1 = 0.
  - both empty: P = R = F1 = ``both_empty`` (default 1.0: nothing to find and nothing claimed).

  Apart from the both-empty case these equal scikit-learn's ``zero_division=0``.
* Macro over items: the mean of the per-item values (scikit-learn's ``average="samples"``).
  Micro: precision/recall/F1 of the summed true positives, predictions and truths.
* Accuracy: exact set match ``pred == true`` (subset accuracy). For single-label tasks this is
  "the true label and no other label", the CMI-Bench rule for classification.

Metrics
-------
:func:`item_prf`, :func:`set_scores` (per-item arrays, macro, micro, accuracy),
:func:`per_label_scores` (support/P/R/F1 per label for bias tables),
:func:`true_false_scores` (yes/no answers per label), :func:`aggregate_chunks` ("any" /
"majority" over chunked answers) and :func:`item_labels` (one item's prediction from its chunk answers),
:func:`label_set_scores` (one condition's per-item scores and summary, with "same tree" scores), :func:`binary_choices` and :func:`binary_choice_correct`,
:func:`hierarchy_labels` (FMA "same tree" scoring; "same node" is the plain exact scoring),
:func:`permutation_null_f1` (chance by permuting predictions across items).

References
----------
.. [1] docs/protocols/factual.md (factual QA framework).
.. [2] scikit-learn, ``precision_recall_fscore_support``.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterable, Mapping, Sequence

import numpy as np

from musiceval.schemas import binary_choices  # noqa: F401  (re-exported; defined beside the prompt builders' shapes)

LabelSets = Sequence[Iterable[str]]
#: the per-item scores of :func:`set_scores`, in the order a report lists them
SET_METRICS = ("precision", "recall", "f1", "accuracy")


def validate(pred: LabelSets, true: LabelSets) -> tuple[list[set[str]], list[set[str]]]:
    """Check that predictions and truths pair up and hold label strings; return them as sets.

    Raises
    ------
    ValueError
        naming the bad input when the lengths differ or an entry is not a collection of strings.
    """
    if isinstance(pred, (str, bytes)) or isinstance(true, (str, bytes)):
        raise ValueError("pred and true must be sequences of label collections, not a string")
    if len(pred) != len(true):
        raise ValueError(f"pred has {len(pred)} items but true has {len(true)}; pass one label set per item")
    out = []
    for name, seqs in (("pred", pred), ("true", true)):
        sets = []
        for i, labels in enumerate(seqs):
            if isinstance(labels, (str, bytes)):
                raise ValueError(f"{name}[{i}] is a string ({labels!r}); pass a list of labels, e.g. [{labels!r}]")
            labels = set(labels)
            bad = [x for x in labels if not isinstance(x, str)]
            if bad:
                raise ValueError(f"{name}[{i}] holds non-string labels {bad!r}")
            sets.append(labels)
        out.append(sets)
    return out[0], out[1]


def item_prf(pred: Iterable[str], true: Iterable[str], *, both_empty: float = 1.0) -> tuple[float, float, float]:
    """Precision, recall and F1 of one predicted label set against one true label set.

    Examples
    --------
    The spec's hedging example, "pop/soft rock" extracted as [pop, rock] against [pop]:

    >>> [round(v, 3) for v in item_prf(["pop", "rock"], ["pop"])]
    [0.5, 1.0, 0.667]
    >>> item_prf([], ["jazz"])
    (0.0, 0.0, 0.0)
    >>> item_prf([], [])
    (1.0, 1.0, 1.0)
    """
    p, t = set(pred), set(true)
    if not p and not t:
        return both_empty, both_empty, both_empty
    tp = len(p & t)
    precision = tp / len(p) if p else 0.0
    recall = tp / len(t) if t else 0.0
    f1 = 2 * tp / (len(p) + len(t))
    return precision, recall, f1


def _micro(tp: int, n_pred: int, n_true: int, both_empty: float) -> tuple[float, float, float]:
    if n_pred == 0 and n_true == 0:
        return both_empty, both_empty, both_empty
    return (tp / n_pred if n_pred else 0.0, tp / n_true if n_true else 0.0, 2 * tp / (n_pred + n_true))


def set_scores(pred: LabelSets, true: LabelSets, *, both_empty: float = 1.0) -> dict:
    """Per-item P/R/F1 and accuracy, their macro means over items, and micro totals.

    Returns
    -------
    dict
        ``per_item``: dict of numpy arrays ``precision``, ``recall``, ``f1``, ``accuracy``;
        ``macro``: dict of their means; ``micro``: dict ``precision``, ``recall``, ``f1`` from the
        summed counts; ``n``: number of items.

    Examples
    --------
    >>> s = set_scores([["pop", "rock"], ["jazz"]], [["pop"], ["blues"]])
    >>> round(s["macro"]["f1"], 3), s["macro"]["accuracy"], round(s["micro"]["precision"], 3)
    (0.333, 0.0, 0.333)
    """
    pred_sets, true_sets = validate(pred, true)
    n = len(pred_sets)
    per = np.array([item_prf(p, t, both_empty=both_empty) for p, t in zip(pred_sets, true_sets)], dtype=float).reshape(n, 3)
    acc = np.array([float(p == t) for p, t in zip(pred_sets, true_sets)], dtype=float)
    tp = sum(len(p & t) for p, t in zip(pred_sets, true_sets))
    n_pred = sum(len(p) for p in pred_sets)
    n_true = sum(len(t) for t in true_sets)
    per_item = {"precision": per[:, 0], "recall": per[:, 1], "f1": per[:, 2], "accuracy": acc}
    macro = {k: float(v.mean()) if n else float("nan") for k, v in per_item.items()}
    micro = dict(zip(("precision", "recall", "f1"), _micro(tp, n_pred, n_true, both_empty)))
    return {"n": n, "per_item": per_item, "macro": macro, "micro": micro}


def per_label_scores(pred: LabelSets, true: LabelSets, labels: Sequence[str] | None = None) -> "OrderedDict[str, dict]":
    """Per-label support, prediction count, precision, recall and F1 (for bias tables).

    For label ``l``: ``support`` = items whose truth holds ``l``, ``n_pred`` = items whose
    prediction holds ``l``; P, R, F1 as scikit-learn's ``average=None`` with ``zero_division=0``.
    ``labels`` fixes the rows and their order (default: every label seen, sorted).
    """
    pred_sets, true_sets = validate(pred, true)
    if labels is None:
        labels = sorted(set().union(*pred_sets, *true_sets)) if pred_sets else []
    table: OrderedDict[str, dict] = OrderedDict()
    for label in labels:
        tp = sum(1 for p, t in zip(pred_sets, true_sets) if label in p and label in t)
        n_pred = sum(1 for p in pred_sets if label in p)
        support = sum(1 for t in true_sets if label in t)
        precision, recall, f1 = _micro(tp, n_pred, support, 0.0)
        table[label] = {"support": support, "n_pred": n_pred, "precision": precision, "recall": recall, "f1": f1}
    return table


def true_false_scores(answers: Sequence[Mapping[str, bool | None]], true: LabelSets, labels: Sequence[str]) -> dict:
    """Score a true/false table: one yes/no answer per (item, label) ("Is {label} used ...?").

    ``answers[i][label]`` is True (yes), False (no) or None (no parseable answer; counted as
    wrong for accuracy and as "no" for the set metrics). Returns ``accuracy`` over every cell
    of the table, ``n_unanswered``, and the set metrics of :func:`set_scores` with the labels
    answered "yes" as the prediction.
    """
    if len(answers) != len(true):
        raise ValueError(f"answers has {len(answers)} items but true has {len(true)}")
    true_sets = [set(t) for t in true]
    cells = correct = unanswered = 0
    pred_sets = []
    for i, (row, truth) in enumerate(zip(answers, true_sets)):
        missing = [label for label in labels if label not in row]
        if missing:
            raise ValueError(f"answers[{i}] has no answer for labels {missing}; ask every label of the table")
        for label in labels:
            cells += 1
            if row[label] is None:
                unanswered += 1
            elif row[label] == (label in truth):
                correct += 1
        pred_sets.append({label for label in labels if row[label] is True})
    scores = set_scores(pred_sets, [t & set(labels) for t in true_sets])
    return {"accuracy": correct / cells if cells else float("nan"), "n_cells": cells, "n_unanswered": unanswered, **scores}


def aggregate_chunks(chunk_labels: Sequence[Sequence[str]], how: str = "any") -> list[str]:
    """Combine the labels extracted from several chunks of one recording into one prediction.

    ``how="any"``: a label counts if any chunk names it; ``"majority"``: if strictly more than half
    of the chunks name it. Order: first mention across chunks (rule 4).

    >>> aggregate_chunks([["piano"], ["piano", "violin"], ["cello"]], "majority")
    ['piano']
    """
    if how not in ("any", "majority"):
        raise ValueError(f"how must be 'any' or 'majority', got {how!r}")
    counts: OrderedDict[str, int] = OrderedDict()
    for labels in chunk_labels:
        for label in dict.fromkeys(labels):
            counts[label] = counts.get(label, 0) + 1
    need = 1 if how == "any" else len(chunk_labels) // 2 + 1
    return [label for label, c in counts.items() if c >= need]


def item_labels(chunk_labels: Sequence[tuple[Sequence[str] | None, str | None]],
                how: str | None) -> tuple[tuple[str, ...] | None, str | None]:
    """One item's predicted labels from what was extracted from each of its chunk answers, in chunk
    order (``(labels, None)``, or ``(None, reason)`` where extraction failed): ``(labels, None)`` with
    the only chunk's labels, or several chunks' combined by :func:`aggregate_chunks` with ``how``;
    ``(None, reason)`` when a chunk failed, or when several chunks have no rule (``how`` None).

    >>> item_labels([(["piano"], None), (["piano", "violin"], None), (["cello"], None)], "majority")
    (('piano',), None)
    >>> item_labels([(["piano"], None), (None, "timeout")], "any")
    (None, 'extraction failed on chunk 1: timeout')
    """
    for k, (labels, reason) in enumerate(chunk_labels):
        if labels is None:
            return None, f"extraction failed{f' on chunk {k}' if len(chunk_labels) > 1 else ''}: {reason}"
    if len(chunk_labels) == 1:
        return tuple(chunk_labels[0][0]), None  # type: ignore[arg-type]
    if how is None:
        return None, f"answered in {len(chunk_labels)} audio chunks; pass --chunks any|majority to aggregate them"
    return tuple(aggregate_chunks([labels for labels, _ in chunk_labels], how)), None  # type: ignore[misc]


def label_set_scores(pred: LabelSets, true: LabelSets, *,
                     hierarchy: Mapping[str, str | None] | None = None) -> tuple[dict[str, np.ndarray], dict]:
    """Per-item scores by metric and their summary, for one condition's items.

    The per-item arrays are :data:`SET_METRICS` of :func:`set_scores`, and with a ``hierarchy``
    (``child -> parent``) also ``same_tree_<metric>``, the scores of the labels mapped by
    :func:`hierarchy_labels`. The summary holds the macro ``<metric>``, ``micro_<metric>`` (P, R,
    F1), ``n``, and with a hierarchy the macro tables ``same_node`` and ``same_tree``. With no items
    the arrays are empty and every summary value is None.

    >>> per, summary = label_set_scores([["piano"], []], [["piano"], ["violin"]])
    >>> per["f1"].tolist(), summary["f1"], summary["n"]
    ([1.0, 0.0], 0.5, 2)
    """
    s = set_scores(pred, true) if len(pred) else None
    per = {m: s["per_item"][m] if s else np.zeros(0) for m in SET_METRICS}
    summary: dict = {m: (s["macro"][m] if s else None) for m in SET_METRICS}
    summary.update({f"micro_{m}": (s["micro"][m] if s else None) for m in ("precision", "recall", "f1")})
    summary["n"] = len(pred)
    if hierarchy is not None:
        tree = (set_scores([hierarchy_labels(p, hierarchy) for p in pred], [hierarchy_labels(t, hierarchy) for t in true])
                if len(pred) else None)
        for m in SET_METRICS:
            per[f"same_tree_{m}"] = tree["per_item"][m] if tree else np.zeros(0)
        summary["same_node"] = {m: summary[m] for m in SET_METRICS}
        summary["same_tree"] = {m: (tree["macro"][m] if tree else None) for m in SET_METRICS}
    return per, summary


def binary_choice_correct(pred: Iterable[str], true_label: str, distractor: str) -> float:
    """1.0 when the extracted labels name the true option and not the distractor, else 0.0."""
    p = set(pred)
    return float(true_label in p and distractor not in p)


def hierarchy_labels(labels: Iterable[str], parent: Mapping[str, str | None]) -> list[str]:
    """Map genres to their top-level ancestor in a tree given as ``child -> parent`` (root -> None).

    Scoring the mapped sets with :func:`set_scores` is the FMA "same tree" rule: a predicted
    genre counts when it lies in the true top-level genre's subtree. Scoring the unmapped labels
    is "same node". Labels absent from the tree are kept as they are.
    """
    out = []
    for label in labels:
        node, seen = label, set()
        while parent.get(node) is not None:
            if node in seen:
                raise ValueError(f"genre tree has a cycle through {node!r}")
            seen.add(node)
            node = parent[node]
        out.append(node)
    return list(dict.fromkeys(out))


def binarize(sets: LabelSets, labels: Sequence[str]) -> np.ndarray:
    """Items x labels 0/1 matrix (labels outside ``labels`` are ignored)."""
    index = {label: j for j, label in enumerate(labels)}
    m = np.zeros((len(sets), len(labels)), dtype=np.int32)
    for i, s in enumerate(sets):
        for label in s:
            j = index.get(label)
            if j is not None:
                m[i, j] = 1
    return m


def f1_matrix(pred: np.ndarray, true: np.ndarray, *, both_empty: float = 1.0) -> np.ndarray:
    """Per-item F1 of 0/1 matrices (rows are items); same convention as :func:`item_prf`."""
    tp = (pred * true).sum(axis=1)
    denom = pred.sum(axis=1) + true.sum(axis=1)
    return np.where(denom == 0, both_empty, 2 * tp / np.maximum(denom, 1))


def permutation_null_f1(pred: LabelSets, true: LabelSets, *, n_permutations: int = 1000, seed: int = 0,
                        items: Sequence[str] | None = None) -> np.ndarray:
    """Chance level of macro F1 by permuting predictions across items.

    Keeps both label marginals and breaks only the link between an answer and its item
    (the label-permutation chance level). Returns ``n_permutations`` null means, for
    ``gate.beats_permutation_null``.

    ``items`` (one per row: the item the row answers, e.g. the original item of each of K sampled
    repeats) moves all rows of an item together (:func:`musiceval.stats.permutation.moved_rows`):
    every answer of an item is scored against one other item's truth, never against the truth of
    another repeat of its own. Rows of one item must share their truth. Without ``items`` (or with
    one row per item) every row is its own item: the same null, draw for draw.

    >>> null = permutation_null_f1([["a"]] * 2 + [["b"]] * 2, [["a"]] * 2 + [["b"]] * 2, n_permutations=50,
    ...                            items=["q1", "q1", "q2", "q2"])
    >>> sorted(set(null.tolist()))  # the two repeats of q1 move together: all right or all wrong
    [0.0, 1.0]
    """
    from musiceval.stats import permutation_null
    from musiceval.stats.permutation import item_codes, moved_rows

    pred_sets, true_sets = validate(pred, true)
    labels = sorted(set().union(*pred_sets, *true_sets)) if pred_sets else []
    p, t = binarize(pred_sets, labels), binarize(true_sets, labels)
    codes = item_codes(items, len(pred_sets))
    n_items = int(codes.max()) + 1 if codes.size else 0
    first = np.full(n_items, -1)
    for row, code in enumerate(codes.tolist()):
        if first[code] < 0:
            first[code] = row
        elif true_sets[row] != true_sets[first[code]]:
            raise ValueError(f"items: rows {first[code]} and {row} answer one item ({items[row]!r}) with different "
                             f"truths {sorted(true_sets[first[code]])} and {sorted(true_sets[row])}; name each row's item")
    truth_of_item = t[first]

    def null_mean(perm: np.ndarray) -> float:
        rows, place = moved_rows(codes, perm)
        return float(f1_matrix(p[rows], truth_of_item[place]).mean())

    return permutation_null(null_mean, n_items, n_permutations=n_permutations, seed=seed)


def best_constant_label_set(true: LabelSets, *, labels: Sequence[str] | None = None) -> tuple[tuple[str, ...], np.ndarray]:
    """The label set that, given as the answer to every item, scores the highest mean F1, and its
    per-item F1: the strongest constant (answer-blind) strategy of a factual task.

    Found by greedy forward selection (add the label that raises the mean F1 most; stop when none
    does; ties go to the earlier label in sorted order, so the result does not depend on the order
    of the items). For single-label truths this is exact: the best set of size ``m`` is the ``m``
    most frequent labels, with mean F1 ``2 / (m + 1)`` times their share, and the greedy path
    passes through every such set. Empty truths follow :func:`item_prf` (a non-empty constant
    scores 0 there).

    >>> best_constant_label_set([["pop"], ["pop"], ["rock"], ["jazz"]])
    (('pop',), array([1., 1., 0., 0.]))
    >>> best_constant_label_set([["pop"], ["rock"], ["pop"], ["rock"]])[0]
    ('pop', 'rock')
    """
    _, true_sets = validate([()] * len(true), true)
    if not true_sets:
        raise ValueError("best_constant_label_set needs at least one item")
    names = sorted(set().union(*true_sets) | set(labels or ()))
    t = binarize(true_sets, names).astype(float)
    sizes = t.sum(axis=1)
    chosen: list[int] = []
    inter = np.zeros(len(true_sets))

    def f1(inter: np.ndarray, k: int) -> np.ndarray:
        denom = k + sizes
        return np.where(denom == 0, 1.0, 2 * inter / np.maximum(denom, 1))

    current = f1(inter, 0)
    while len(chosen) < len(names):
        candidates = [j for j in range(len(names)) if j not in chosen]
        gains = [f1(inter + t[:, j], len(chosen) + 1).mean() for j in candidates]
        best = int(np.argmax(gains))
        if gains[best] <= current.mean():
            break
        chosen.append(candidates[best])
        inter = inter + t[:, candidates[best]]
        current = f1(inter, len(chosen))
    return tuple(names[j] for j in sorted(chosen)), current
