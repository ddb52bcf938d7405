"""FENSE: Sentence-BERT similarity with a fluency-error penalty (caption evaluation).

Zhou, Zhang, Wu, Zou, Zhao & Gao 2022, "Can Audio Captions Be Evaluated with Image Caption
Metrics?" (ICASSP; arXiv:2110.04684). Per candidate caption ``c`` with references ``R``:

    sim(c)   = mean over r in R of cos(e(c), e(r))      e: Sentence-BERT (paraphrase-TinyBERT-L6-v2)
    error(c) = 1 if p_error(c) > threshold else 0       p_error: the BERT error detector's "error" output
    FENSE(c) = sim(c) * (1 - penalty * error(c))        penalty 0.9, threshold 0.9

so a caption the detector flags keeps a tenth of its similarity. The corpus FENSE is the mean of
the per-caption values. This is the rule of the reference implementations (blmoistawinde/fense
``Evaluator``; aac-metrics ``fense``/``sbert_sim``/``fer``), checked against aac-metrics in
tests/metrics/test_fense.py.

The functions here are pure: the sentence encoder and the error detector come in as callables
(:mod:`musiceval.metrics.fense_models` loads the published models).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

#: texts -> L2-normalised rows (Sentence-BERT)
Embed = Callable[[Sequence[str]], np.ndarray]
#: texts -> probability of a fluency error per text (the detector's "error" class)
ErrorProbs = Callable[[Sequence[str]], np.ndarray]

PENALTY = 0.9
THRESHOLD = 0.9


def _check(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> None:
    if len(candidates) != len(references):
        raise ValueError(f"FENSE: {len(candidates)} candidates but {len(references)} reference lists; pass one list per candidate")
    empty = [k for k, refs in enumerate(references) if isinstance(refs, str) or len(refs) == 0]
    if empty:
        raise ValueError(f"FENSE: items {empty[:10]} have no reference list (a list of strings per candidate); "
                         "drop them or count them as failures before scoring")


def sbert_similarity(candidates: Sequence[str], references: Sequence[Sequence[str]], *, embed: Embed) -> np.ndarray:
    """Per candidate: the mean cosine similarity to its references (rows of ``embed`` are unit vectors).

    >>> e = lambda ts: np.array([[1.0, 0.0] if t == "a" else [0.0, 1.0] for t in ts])
    >>> sbert_similarity(["a"], [["a", "b"]], embed=e).tolist()
    [0.5]
    """
    _check(candidates, references)
    if not len(candidates):
        return np.zeros(0)
    flat = [r for refs in references for r in refs]
    cand = np.asarray(embed(list(candidates)), dtype=np.float64)
    ref = np.asarray(embed(flat), dtype=np.float64)
    out, start = np.empty(len(candidates)), 0
    for k, refs in enumerate(references):
        out[k] = float((ref[start : start + len(refs)] @ cand[k]).mean())
        start += len(refs)
    return out


def fluency_errors(candidates: Sequence[str], *, error_probs: ErrorProbs, threshold: float = THRESHOLD) -> np.ndarray:
    """1.0 where the detector's error probability exceeds ``threshold`` (strictly), else 0.0."""
    probs = np.asarray(error_probs(list(candidates)), dtype=np.float64).reshape(-1)
    if probs.shape[0] != len(candidates):
        raise ValueError(f"error_probs returned {probs.shape[0]} values for {len(candidates)} candidates")
    return (probs > threshold).astype(np.float64)


def fense(candidates: Sequence[str], references: Sequence[Sequence[str]], *, embed: Embed, error_probs: ErrorProbs,
          penalty: float = PENALTY, threshold: float = THRESHOLD) -> np.ndarray:
    """Per-candidate FENSE (Zhou et al. 2022): ``sim * (1 - penalty * [p_error > threshold])``.

    Parameters
    ----------
    candidates : sequence of str
        One caption per item.
    references : sequence of sequence of str
        The reference captions of each item (at least one each).
    embed : callable
        Texts -> L2-normalised Sentence-BERT rows (paraphrase-TinyBERT-L6-v2 in the paper).
    error_probs : callable
        Texts -> the fluency-error detector's probability of an error (echecker_clotho_audiocaps_base).
    penalty, threshold : float
        0.9 and 0.9 in the paper and both reference implementations.

    Returns
    -------
    numpy.ndarray
        One value per candidate, in [-1, 1] (cosine similarities); the corpus FENSE is the mean.

    >>> e = lambda ts: np.array([[1.0, 0.0] if "dog" in t else [0.6, 0.8] for t in ts])
    >>> p = lambda ts: np.array([0.95 if t.endswith("and") else 0.1 for t in ts])
    >>> fense(["a dog barks", "a dog barks and"], [["dog barking", "rain"], ["dog barking"]], embed=e, error_probs=p).round(3).tolist()
    [0.8, 0.1]
    """
    sims = sbert_similarity(candidates, references, embed=embed)
    if not len(candidates):
        return sims
    return sims * (1.0 - penalty * fluency_errors(candidates, error_probs=error_probs, threshold=threshold))
