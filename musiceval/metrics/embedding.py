"""Embedding metrics of a candidate answer against a reference: CLAPText, sentence cosine,
CLAPAudio, BERTScore.

Conventions
-----------
- The model is passed in (a :class:`musiceval.encoders.base.TextEncoder`, a CLAP encoder or a
  ``bert_score.BERTScorer``); loading and caching live in :mod:`musiceval.encoders`.
- :func:`text_similarity` embeds every *distinct* string of candidates and references once per
  call (through :func:`musiceval.encoders.base.embed_distinct`, with the on-disk
  :class:`~musiceval.encoders.base.EmbeddingCache` when given), then takes row-wise cosines.
  Encoders return L2-normalised rows, so cosine is a dot product; values lie in [-1, 1].
- Empty (or whitespace-only) candidates score 0.0 without being embedded: an empty answer
  states nothing, and an encoder's embedding of "" is an artefact of its special tokens, not a
  meaning. References must be non-empty: callers validate them and report a per-item failure.

Metrics
-------
- **CLAPText** (c, r) = cos(CLAP_text(c), CLAP_text(r)): :func:`text_similarity` with a CLAP text
  encoder (``clap:laion/larger_clap_music``).
- **Sentence cosine**: the same with a sentence-transformers encoder (``minilm``), the
  general-purpose control that shows what CLAP's music-aware text tower adds.
- **CLAPAudio** (c, a) = cos(CLAP_text(c), CLAP_audio(a)): reference-free, for runs with audio
  (:func:`audio_text_similarity`). No published metric does this; it needs no reference.
- **BERTScore** (Zhang et al. 2020): :func:`bertscore` wraps ``bert_score.BERTScorer`` (greedy
  token matching of contextual embeddings; P, R, F1; idf and baseline rescaling as configured
  on the scorer). bert-score itself embeds each distinct sentence once per call.

References
----------
Zhang, Kishore, Wu, Weinberger, Artzi (2020). BERTScore: Evaluating text generation with BERT. ICLR.
Wu, Chen, Zhang, Hui, Berg-Kirkpatrick, Dubnov (2023). Large-scale contrastive language-audio
pretraining with feature fusion and keyword-to-caption augmentation (LAION-CLAP). ICASSP.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from musiceval.encoders.base import EmbeddingCache, TextEncoder, embed_distinct


def _is_empty(text: str) -> bool:
    return not text.strip()


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two ``(n, d)`` arrays (rows need not be normalised). Zero rows give 0."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"cosine_rows: shapes differ ({a.shape} vs {b.shape})")
    na = np.linalg.norm(a, axis=-1)
    nb = np.linalg.norm(b, axis=-1)
    denom = na * nb
    dots = np.einsum("ij,ij->i", a, b)
    out = np.divide(dots, denom, out=np.zeros_like(dots), where=denom > 0)
    return np.clip(out, -1.0, 1.0)


def text_similarity(
    encoder: TextEncoder,
    candidates: Sequence[str],
    references: Sequence[str],
    *,
    cache: EmbeddingCache | None = None,
) -> np.ndarray:
    """Cosine of the embeddings of each candidate and its reference (CLAPText, sentence cosine).

    Parameters
    ----------
    encoder : TextEncoder
        Returns L2-normalised rows.
    candidates, references : sequence of str
        Aligned; references non-empty.
    cache : EmbeddingCache, optional
        On-disk cache keyed by (encoder id, text hash).

    Returns
    -------
    numpy.ndarray
        One value in [-1, 1] per pair; 0.0 where the candidate is empty.
    """
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidates but {len(references)} references")
    for k, r in enumerate(references):
        if _is_empty(r):
            raise ValueError(f"reference {k} is empty; the item cannot be scored")
    keep = [k for k, c in enumerate(candidates) if not _is_empty(c)]
    out = np.zeros(len(candidates))
    if not keep:
        return out
    texts = [candidates[k] for k in keep] + [references[k] for k in keep]
    # embed shortest first: batches of similar lengths waste little compute on padding
    order = sorted(range(len(texts)), key=lambda k: len(texts[k]))
    sorted_emb = embed_distinct(encoder, [texts[k] for k in order], cache=cache)
    emb = np.empty_like(sorted_emb)
    emb[order] = sorted_emb
    out[keep] = cosine_rows(emb[: len(keep)], emb[len(keep) :])
    return out


def audio_text_similarity(text_embeddings: np.ndarray, audio_embeddings: np.ndarray) -> np.ndarray:
    """CLAPAudio: cosine of each answer's CLAP text embedding with its clip's CLAP audio embedding.

    Reference-free: how well the answer describes the audio in CLAP's joint space. In [-1, 1].
    """
    return cosine_rows(text_embeddings, audio_embeddings)


def bertscore(scorer: Any, candidates: Sequence[str], references: Sequence[str], *, batch_size: int = 64) -> dict[str, np.ndarray]:
    """BERTScore P, R, F1 per pair with a configured ``bert_score.BERTScorer``.

    Build the scorer with the model and layer to use, e.g. ``BERTScorer(model_type=<dir>,
    num_layers=6)``; pass ``rescale_with_baseline=True, baseline_path=<tsv>`` for rescaled
    values (then values may leave [0, 1]). Empty candidates score 0.0 on P, R and F1 (bert-score
    itself would return a meaningless value from the special tokens).
    """
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidates but {len(references)} references")
    for k, r in enumerate(references):
        if _is_empty(r):
            raise ValueError(f"reference {k} is empty; the item cannot be scored")
    keep = [k for k, c in enumerate(candidates) if not _is_empty(c)]
    out = {name: np.zeros(len(candidates)) for name in ("precision", "recall", "f1")}
    if keep:
        p, r, f = scorer.score([candidates[k] for k in keep], [references[k] for k in keep], batch_size=batch_size)
        for name, values in zip(("precision", "recall", "f1"), (p, r, f)):
            out[name][keep] = values.detach().cpu().numpy().astype(float)
    return out
