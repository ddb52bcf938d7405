"""Lexical (n-gram) metrics of a candidate answer against reference answers: BLEU, BLEU-4, ROUGE-L.

METEOR lives in :mod:`musiceval.metrics.meteor` and CIDEr-D in :mod:`musiceval.metrics.cider`;
:func:`musiceval.metrics.lexical_corpus.lexical_scores` scores all five over a batch, tokenising each
distinct text once.

Conventions
-----------
- A candidate is one string; ``references`` is one string or a list of strings (MusicQA has one
  reference per item, Song Describer several captions per track).
- **Tokenisation** (:func:`word_tokens`, used by BLEU, BLEU-4, METEOR and CIDEr-D): lowercase, then
  the maximal runs of Unicode word characters (regex ``\\w+``); punctuation is dropped. This is
  nltk's ``wordpunct_tokenize`` (used by MU-LLaMA's evaluation) without the punctuation tokens,
  and close to coco-caption's PTB tokenisation, which also removes punctuation.
- **ROUGE-L** keeps rouge-score's own tokenisation (:func:`rouge_tokens`) so that its numbers are
  rouge-score's: lowercase, every character outside ``[a-z0-9]`` becomes a space (so non-ASCII
  letters are dropped), optional Porter stemming of tokens longer than 3 characters.
- Values are in [0, 1]. An empty (or whitespace-only) candidate scores 0 on every metric; a
  reference with no tokens is an error (:func:`validate` raises ``ValueError``): the item cannot
  be scored and is reported as a per-item failure by the callers.

Why this BLEU smoothing
-----------------------
Gates compare *per-item* (sentence-level) scores. Unsmoothed sentence BLEU is exactly 0 for any
answer without a matching 4-gram, which is most short answers, so the per-item distribution
collapses onto 0 and paired tests lose their power. We use NIST geometric smoothing (Chen &
Cherry 2014, "method 3"; mteval-v13a): a zero n-gram count contributes ``1 / (2^k * total_n)``,
k counting the zero orders so far. It is the default of ``sacrebleu.sentence_bleu`` ("exp") and
``nltk``'s ``SmoothingFunction().method3``, so two reference implementations define it; we match
nltk's ``sentence_bleu(..., smoothing_function=method3)`` exactly, including nltk's rule that a
candidate with no unigram match scores 0. (sacrebleu differs only in using the "effective
order" for candidates shorter than 4 tokens.)

Metrics
-------
- :func:`bleu`: cumulative BLEU (geometric mean of the modified 1- to 4-gram precisions, uniform
  weights) times the brevity penalty (Papineni et al. 2002).
- :func:`bleu4`: the individual 4-gram precision times the brevity penalty: ``weights=(0, 0, 0,
  1)``, as MU-LLaMA's evaluation script reports "BLEU-4" next to "BLEU".
- :func:`rouge_l`: ROUGE-L F-measure (Lin 2004), LCS-based, as ``rouge_score.RougeScorer(["rougeL"])``.

References
----------
Papineni, Roukos, Ward, Zhu (2002). BLEU: a method for automatic evaluation of machine translation.
Chen, Cherry (2014). A systematic comparison of smoothing techniques for sentence-level BLEU.
Lin (2004). ROUGE: a package for automatic evaluation of summaries.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Sequence


from musiceval.metrics.stemmers import rouge_stem

_WORD_RE = re.compile(r"\w+")
_ROUGE_SPLIT_RE = re.compile(r"[^a-z0-9]+")
MAX_N = 4
#: bump when a free-form metric's tokenisation or formula changes (provenance: runs do not compare)
METRICS_VERSION = "freeform-metrics-1"


def as_text(value: object, name: str) -> str:
    """Return ``value`` as ``str``; UTF-8 ``bytes`` are decoded. ``None``, undecodable bytes and
    other types raise ``ValueError`` naming ``name``."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{name} is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    raise ValueError(f"{name} must be a string, got {type(value).__name__}")


def word_tokens(text: str) -> tuple[str, ...]:
    """Lowercased ``\\w+`` runs: the tokenisation of BLEU, METEOR and CIDEr-D."""
    return _tokens_cached(text)


@lru_cache(maxsize=8192)
def _tokens_cached(text: str) -> tuple[str, ...]:
    return tuple(_WORD_RE.findall(text.lower()))


def rouge_tokens(text: str, use_stemmer: bool = False) -> tuple[str, ...]:
    """rouge-score's tokenisation (``rouge_score.tokenize.tokenize``)."""
    return _rouge_tokens_cached(text, use_stemmer)


@lru_cache(maxsize=8192)
def _rouge_tokens_cached(text: str, use_stemmer: bool) -> tuple[str, ...]:
    tokens = [t for t in _ROUGE_SPLIT_RE.split(text.lower()) if t]
    if use_stemmer:
        tokens = [rouge_stem(t) if len(t) > 3 else t for t in tokens]
    return tuple(tokens)


def ngram_counts(tokens: tuple[str, ...], max_n: int = MAX_N) -> tuple[Counter, ...]:
    """Counters of the 1- to ``max_n``-grams of ``tokens`` (cached per distinct token tuple)."""
    return _ngram_counts_cached(tokens, max_n)


@lru_cache(maxsize=8192)
def _ngram_counts_cached(tokens: tuple[str, ...], max_n: int) -> tuple[Counter, ...]:
    return tuple(Counter(zip(*(tokens[i:] for i in range(n)))) for n in range(1, max_n + 1))


def validate(candidate: object, references: object) -> tuple[str, list[str]]:
    """Check one (candidate, references) pair; return them as ``(str, [str, ...])``.

    Raises ``ValueError`` naming the bad input: ``None`` or non-UTF-8 text, no reference, or a
    reference without a single word token.
    """
    cand = as_text(candidate, "candidate")
    refs = [references] if isinstance(references, (str, bytes, bytearray)) or references is None else list(references)
    if not refs:
        raise ValueError("references is empty: an item needs at least one reference answer")
    refs = [as_text(r, f"reference {k}") for k, r in enumerate(refs)]
    for k, r in enumerate(refs):
        if _WORD_RE.search(r.lower()) is None:  # no word token (without tokenising or caching)
            raise ValueError(f"reference {k} has no word tokens ({r[:40]!r}); the item cannot be scored")
    return cand, refs


def _closest_ref_length(ref_lens: Sequence[int], hyp_len: int) -> int:
    return min(ref_lens, key=lambda r: (abs(r - hyp_len), r))


def _brevity_penalty(ref_len: int, hyp_len: int) -> float:
    if hyp_len > ref_len:
        return 1.0
    if hyp_len == 0:
        return 0.0
    return math.exp(1 - ref_len / hyp_len)


def _bleu_from_tokens(hyp: tuple[str, ...], refs: list[tuple[str, ...]], weights: Sequence[float]) -> float:
    """Sentence BLEU with NIST geometric smoothing; nltk ``sentence_bleu`` + ``method3`` semantics."""
    hyp_counts = ngram_counts(hyp)
    ref_counts = [ngram_counts(r) for r in refs]
    numerators, denominators = [], []
    for n in range(MAX_N):
        counts = hyp_counts[n]
        if len(refs) == 1:
            max_ref = ref_counts[0][n]
        else:
            max_ref = Counter()
            for rc in ref_counts:
                max_ref |= rc[n]
        numerators.append(sum(min(c, max_ref[g]) for g, c in counts.items()))
        denominators.append(max(1, sum(counts.values())))
    if numerators[0] == 0:
        return 0.0
    bp = _brevity_penalty(_closest_ref_length([len(r) for r in refs], len(hyp)), len(hyp))
    return smoothed_bleu(numerators, denominators, weights, bp)


def smoothed_bleu(numerators: Sequence[int], denominators: Sequence[int], weights: Sequence[float], bp: float) -> float:
    """BLEU from clipped n-gram counts with NIST geometric smoothing (nltk ``method3``): a zero
    precision of order n becomes ``1 / (2**k * denominator)`` for the k-th zero met."""
    k = 1
    log_sum = []
    for num, den, w in zip(numerators, denominators, weights):
        if num == 0:
            p = 1.0 / (2**k * den)
            k += 1
        else:
            p = num / den
        if w:
            log_sum.append(w * math.log(p))
    return bp * math.exp(math.fsum(log_sum))


def bleu(candidate: str, references: str | Sequence[str]) -> float:
    """Cumulative sentence BLEU (1- to 4-grams, uniform weights, brevity penalty, NIST smoothing).

    Parameters
    ----------
    candidate : str
        The model's answer.
    references : str or sequence of str
        One or more reference answers (clipping uses the maximum count over references, the
        brevity penalty the closest reference length, as in Papineni et al. 2002).

    Returns
    -------
    float
        In [0, 1]; 0 for an empty candidate. Equals ``nltk.translate.bleu_score.sentence_bleu``
        on :func:`word_tokens` with ``SmoothingFunction().method3``.

    Examples
    --------
    >>> round(bleu("a calm piano piece", "a calm piano piece"), 6)
    1.0
    """
    cand, refs = validate(candidate, references)
    return _bleu_from_tokens(word_tokens(cand), [word_tokens(r) for r in refs], (0.25,) * 4)


def bleu4(candidate: str, references: str | Sequence[str]) -> float:
    """BLEU-4: the (smoothed) modified 4-gram precision times the brevity penalty.

    nltk ``sentence_bleu(weights=(0, 0, 0, 1), smoothing_function=method3)`` on
    :func:`word_tokens`; the "BLEU-4" of MU-LLaMA's evaluation. In [0, 1].
    """
    cand, refs = validate(candidate, references)
    return _bleu_from_tokens(word_tokens(cand), [word_tokens(r) for r in refs], (0.0, 0.0, 0.0, 1.0))


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence, bit-parallel (Crochemore et al. 2001).

    One big-integer step per token of the shorter sequence over a bit mask as long as the longer
    one, so a 1 MB answer against a 50-word reference costs 50 steps, not 50 x 170,000.
    """
    if len(a) > len(b):
        a, b = b, a
    if not a:
        return 0
    masks: dict[str, int] = {}
    for j, tok in enumerate(b):
        masks[tok] = masks.get(tok, 0) | (1 << j)
    full = (1 << len(b)) - 1
    v = full
    for tok in a:
        m = masks.get(tok)
        if m is None:
            continue
        u = v & m
        v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()


def _rouge_l_from_tokens(hyp: Sequence[str], ref: Sequence[str]) -> float:
    if not hyp or not ref:
        return 0.0
    lcs = lcs_length(hyp, ref)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(hyp), lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


def rouge_l(candidate: str, references: str | Sequence[str], *, use_stemmer: bool = False) -> float:
    """ROUGE-L F-measure (balanced, beta = 1), rouge-score's definition and tokenisation.

    With several references the maximum over references is returned (rouge-score's
    ``score_multi``). A reference with word tokens but no ``[a-z0-9]`` token (e.g. all
    non-ASCII) scores 0, as in rouge-score. In [0, 1].
    """
    cand, refs = validate(candidate, references)
    hyp = rouge_tokens(cand, use_stemmer)
    return max(_rouge_l_from_tokens(hyp, rouge_tokens(r, use_stemmer)) for r in refs)


LEXICAL_METRICS = ("bleu", "bleu4", "meteor", "rouge_l", "cider")
