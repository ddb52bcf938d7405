"""CIDEr-D (Vedantam, Zitnick, Parikh 2015), the coco-caption definition.

Conventions
-----------
- Tokenisation: :func:`musiceval.metrics.lexical.word_tokens` (lowercased ``\\w+`` runs); the
  coco-caption scorer splits its (already PTB-tokenised) input on whitespace.
- For n = 1..4: TF-IDF vectors ``tf(g) * (log N - log max(1, df(g)))``, ``df(g)`` the number of
  items whose references contain ``g``, N the number of items of the reference corpus
  (``df_references``, default the references being scored); per reference the clipped cosine
  ``sum_g min(v_c(g), v_r(g)) v_r(g) / (|v_c| |v_r|)`` times the Gaussian length penalty
  ``exp(-(l_c - l_r)^2 / (2 sigma^2))``, sigma 6; averaged over n and over references; x10.
- The "length" ``l`` follows pycocoevalcap exactly: it is the number of *bigrams* (``len - 1``
  for a non-empty text) because the scorer counts term frequencies of ``n == 1`` in its
  zero-based loop; for texts of 2+ tokens this equals the difference in word counts.
- Per-item values lie in [0, 10] (clipping bounds each cosine by 1). The score of an item
  depends on the whole reference corpus through df: to compare conditions pairwise, score them
  with the same ``df_references`` (the free-form scorer passes all references of the run).
  With a corpus of one item log N = 0 and every score is 0 (as in pycocoevalcap).

Equals ``pycocoevalcap.cider.Cider().compute_score`` on the same tokens (tested to 1e-6).
:func:`cider_d` is the per-pair definition; corpus-scale callers use
:class:`musiceval.metrics.lexical_corpus.LexicalCorpus` (document frequencies once per corpus,
vectorised; equal to :func:`cider_d` to ~1e-16).

References
----------
Vedantam, Zitnick, Parikh (2015). CIDEr: Consensus-based image description evaluation. CVPR.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

import numpy as np

from musiceval.metrics.lexical import ngram_counts, word_tokens

SIGMA = 6.0


def _as_list(refs: str | Sequence[str]) -> list[str]:
    return [refs] if isinstance(refs, str) else list(refs)


def document_frequencies(references: Sequence[str | Sequence[str]]) -> tuple[Counter, int]:
    """``df`` over items (an n-gram counts once per item however many references hold it) and N."""
    df: Counter = Counter()
    for refs in references:
        grams: set = set()
        for r in _as_list(refs):
            for counts in ngram_counts(word_tokens(r)):
                grams.update(counts)
        df.update(grams)
    return df, len(references)


def _vector(tokens: tuple[str, ...], df: Counter, log_n: float):
    vecs, norms = [], []
    for counts in ngram_counts(tokens):
        vec = {g: tf * (log_n - math.log(max(1.0, df.get(g, 0.0)))) for g, tf in counts.items()}
        vecs.append(vec)
        norms.append(math.sqrt(sum(v * v for v in vec.values())))
    return vecs, norms, max(0, len(tokens) - 1)


def cider_d(
    candidates: Sequence[str],
    references: Sequence[str | Sequence[str]],
    *,
    df_references: Sequence[str | Sequence[str]] | None = None,
    sigma: float = SIGMA,
) -> np.ndarray:
    """Per-item CIDEr-D of each candidate against its references.

    Parameters
    ----------
    candidates : sequence of str
    references : sequence of (str or sequence of str)
        The references of each candidate.
    df_references : sequence, optional
        The corpus whose document frequencies are used (default ``references``).
    sigma : float
        Standard deviation of the Gaussian length penalty (6 in CIDEr-D).

    Returns
    -------
    numpy.ndarray
        One value in [0, 10] per candidate.
    """
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidates but {len(references)} references")
    df, n_docs = document_frequencies(references if df_references is None else df_references)
    log_n = math.log(float(n_docs)) if n_docs else 0.0
    ref_cache: dict[str, tuple] = {}
    scores = np.zeros(len(candidates))
    two_sigma2 = 2 * sigma**2
    for k, (cand, refs) in enumerate(zip(candidates, references)):
        vec_c, norm_c, len_c = _vector(word_tokens(cand), df, log_n)
        refs = _as_list(refs)
        total = 0.0
        for r in refs:
            if r not in ref_cache:
                ref_cache[r] = _vector(word_tokens(r), df, log_n)
            vec_r, norm_r, len_r = ref_cache[r]
            penalty = math.exp(-((len_c - len_r) ** 2) / two_sigma2)
            for n in range(len(vec_c)):
                vr = vec_r[n]
                val = 0.0
                for g, v in vec_c[n].items():
                    w = vr.get(g)
                    if w is not None:
                        val += min(v, w) * w
                if norm_c[n] != 0 and norm_r[n] != 0:
                    val /= norm_c[n] * norm_r[n]
                total += val * penalty
        scores[k] = total / len(vec_c) / len(refs) * 10.0
    return scores
