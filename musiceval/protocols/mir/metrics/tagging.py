"""Multi-label tagging (MagnaTagATune, MTG-Jamendo): macro ROC-AUC and PR-AUC from similarities.

Conventions
-----------
``y_true`` is a 0/1 matrix (items x tags); ``scores`` a real matrix of the same shape, here the
cosine similarity between the embedded response and each embedded tag. Macro averages are taken
over tags with at least one positive and one negative item; other tags are listed as excluded
(sklearn raises for them in ROC-AUC).

Ground truth:

- CMI-Bench rule (:func:`tag_truth_cmi`): tag ``t`` is true when ``t`` is a substring of the
  lowercased answer string ("classic" is true for "classical", "male" for "female",
  "rock" for "punkrock").
- Default (:func:`tag_truth`): the answer is split on "," and each part normalised (lowercase,
  no ``_ - ' .``/spaces); tag ``t`` is true when it equals a part.

Metrics
-------
- :func:`macro_auc`: macro ROC-AUC (``sklearn.metrics.roc_auc_score``) and macro average
  precision (``sklearn.metrics.average_precision_score``, the PR-AUC of CMI-Bench), and both per tag.
- :func:`per_item_auc`: ROC-AUC of each item's ranking of the tags (its true tags against the
  rest), for paired comparisons between scorers.

Tag scores of the toolkit at commit 35235cb (nicolaus625/CMI-bench, ``multi_label_bert``): two
scorers, each reported as ROC-AUC and PR-AUC: ``embed="gte"``, GTE-Qwen2-7B-instruct with the
"query" prompt on the response (:mod:`musiceval.encoders.gte`; pass its prompt as
``query_prefix``; the toolkit's ``* 100`` changes no AUC), and ``embed="bert"``,
:func:`bertscore_tag_scores` (BERTScore recall of each tag against the response, bert-score's
``lang="en"`` defaults: roberta-large, layer 17). At that commit ROC-AUC is the macro mean over
tags with both classes (as here) while PR-AUC is sklearn's macro ``average_precision_score`` over
*all* tags, a tag with no positive item counting 0 (``macro_auc(..., pr_all_tags=True)``).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np

from musiceval.parsers.labels import normalise_cmi


def tag_truth_cmi(answer: str, tags: Sequence[str]) -> np.ndarray:
    low = answer.lower().strip()
    return np.array([1 if t in low else 0 for t in tags], dtype=int)


def tag_truth(answer: str, tags: Sequence[str]) -> np.ndarray:
    parts = {normalise_cmi(p) for p in answer.split(",") if p.strip()}
    return np.array([1 if t in parts else 0 for t in _normalised(tuple(tags))], dtype=int)


@lru_cache(maxsize=16)
def _normalised(tags: tuple[str, ...]) -> tuple[str, ...]:
    """A task's tag list normalised once, not once per item (MTG_genre: 87 tags x 11,479 items)."""
    return tuple(normalise_cmi(t) for t in tags)


def macro_auc(y_true: np.ndarray, scores: np.ndarray, tags: Sequence[str], *, pr_all_tags: bool = False) -> dict[str, object]:
    """Macro ROC-AUC and PR-AUC over tags with both classes present.

    Returns ``{"roc_auc", "pr_auc", "per_tag": {tag: {"n_pos", "roc_auc", "pr_auc"}}, "excluded"}``.
    With ``pr_all_tags=True`` (the toolkit at 35235cb), ``pr_auc`` is
    ``sklearn.metrics.average_precision_score(y_true, scores, average="macro")`` over every tag:
    a tag without positives contributes 0, one without negatives 1.

    References
    ----------
    Ma et al. 2025, CMI-Bench (arXiv:2506.12285), multi-label evaluation; scikit-learn metrics.
    """
    from sklearn.metrics import average_precision_score, roc_auc_score

    y_true = np.asarray(y_true)
    scores = np.asarray(scores, dtype=float)
    if y_true.shape != scores.shape or y_true.ndim != 2 or y_true.shape[1] != len(tags):
        raise ValueError(f"y_true {y_true.shape}, scores {scores.shape} and {len(tags)} tags disagree")
    pos = y_true.sum(axis=0)
    keep = (pos > 0) & (pos < y_true.shape[0])
    if not keep.any():
        raise ValueError("no tag has both positive and negative items: AUC is undefined")
    per_tag: dict[str, dict[str, float]] = {}
    rocs, aps = [], []
    for j in np.flatnonzero(keep):
        roc = float(roc_auc_score(y_true[:, j], scores[:, j]))
        ap = float(average_precision_score(y_true[:, j], scores[:, j]))
        rocs.append(roc)
        aps.append(ap)
        per_tag[tags[j]] = {"n_pos": int(pos[j]), "roc_auc": roc, "pr_auc": ap}
    pr = float(np.mean(aps))
    if pr_all_tags:
        import warnings

        with warnings.catch_warnings():  # "No positive class found in y_true": sklearn scores it 0
            warnings.simplefilter("ignore")
            pr = float(average_precision_score(y_true, scores, average="macro"))
    return {
        "roc_auc": float(np.mean(rocs)),
        "pr_auc": pr,
        "per_tag": per_tag,
        "excluded": [tags[j] for j in np.flatnonzero(~keep)],
    }


def per_item_auc(y_true: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Per item: the probability that a true tag outscores a false one (ties count 1/2); NaN
    for items without true tags (or without false ones).

    Computed as the Mann-Whitney U of each row's midranks (``scipy.stats.rankdata``), which counts
    every (true, false) pair as the pairwise rule does, exactly (rank sums are multiples of 1/2);
    a row holding a NaN score is compared pair by pair, where a NaN beats nothing and ties nothing.
    """
    from scipy.stats import rankdata

    y_true = np.asarray(y_true).astype(bool)
    scores = np.asarray(scores, dtype=float)
    n_pos = y_true.sum(axis=1)
    n_neg = y_true.shape[1] - n_pos
    out = np.full(y_true.shape[0], np.nan)
    defined = (n_pos > 0) & (n_neg > 0)
    has_nan = np.isnan(scores).any(axis=1)
    ranked = defined & ~has_nan
    if ranked.any():
        ranks = rankdata(scores[ranked], axis=1)
        u = np.where(y_true[ranked], ranks, 0.0).sum(axis=1) - n_pos[ranked] * (n_pos[ranked] + 1) / 2
        out[ranked] = u / (n_pos[ranked] * n_neg[ranked])
    for i in np.flatnonzero(defined & has_nan):
        diff = scores[i, y_true[i]][:, None] - scores[i, ~y_true[i]][None, :]
        out[i] = float(((diff > 0) + 0.5 * (diff == 0)).mean())
    return out


def bertscore_tag_scores(responses: Sequence[str], tags: Sequence[str], scorer, *, batch_size: int = 64) -> np.ndarray:
    """Matrix (responses x tags) of BERTScore recall of each tag against each response.

    The toolkit's ``embed="bert"`` branch: ``score([response] * len(tags), tags, lang="en").R``
    per response (the tag is the reference, so recall asks how well the response covers the tag's
    tokens). ``scorer`` is a configured ``bert_score.BERTScorer`` (the toolkit's defaults:
    roberta-large, layer 17, no idf, no rescaling); each distinct response is scored once.

    References
    ----------
    Zhang et al. 2020, "BERTScore: Evaluating Text Generation with BERT", ICLR.
    """
    tags = list(tags)
    distinct = list(dict.fromkeys(responses))
    if not distinct or not tags:
        return np.zeros((len(responses), len(tags)))
    cands = [r for r in distinct for _ in tags]
    _, recall, _ = scorer.score(cands, tags * len(distinct), batch_size=batch_size)
    table = np.asarray(recall.detach().cpu().numpy(), dtype=float).reshape(len(distinct), len(tags))
    row = {r: k for k, r in enumerate(distinct)}
    return table[[row[r] for r in responses]]


# ------------------------------------------------------------------ answer-blind rankings
# The strongest strategies that never look at the clip (docs/gate-your-model.md, "What the verdict means"; the chance
# gate of docs/gate-your-model.md): one ranking of the tags sent for every item, scored per item
# like the model's own ranking. They are the tagging counterparts of multiple choice's best constant
# answer and are compared with the model paired by item.


def tag_frequency_ranking(y_true: np.ndarray) -> np.ndarray:
    """One score per tag: how many references hold it (the same ranking for every item).

    An **oracle prior**: it reads the references' label distribution, so it is the strongest
    constant ranking an adversary who knew that distribution could send (as the best constant
    answer of multiple choice is, :func:`musiceval.metrics.choice.best_constant_answer`). Ties
    keep equal scores (a tie counts 1/2 in :func:`per_item_auc`).
    """
    return np.asarray(y_true, dtype=float).sum(axis=0)


def most_common_response(texts: Sequence[str]) -> int:
    """The index of the first occurrence of the most frequent response; ties broken by the text
    (the smallest), never by the line order, so the strategy does not move when a file is sorted."""
    if not texts:
        raise ValueError("most_common_response: no responses; score at least one answer")
    counts: dict[str, int] = {}
    for t in texts:
        counts[t] = counts.get(t, 0) + 1
    best = min(counts, key=lambda t: (-counts[t], t))
    return list(texts).index(best)


def constant_ranking_scores(y_true: np.ndarray, ranking: np.ndarray, metric=None) -> np.ndarray:
    """A per-item ranking metric (default :func:`per_item_auc`) of ``ranking`` (one score per tag)
    sent as every item's answer."""
    y_true = np.asarray(y_true)
    scores = np.broadcast_to(np.asarray(ranking, dtype=float), y_true.shape)
    return (metric or per_item_auc)(y_true, scores)
