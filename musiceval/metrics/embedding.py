"""Embedding metrics of a candidate answer against its references: CLAPText, sentence cosine,
BERTScore; and the reference-free CLAPAudio.

Conventions
-----------
- The model is passed in (a :class:`musiceval.encoders.base.TextEncoder`, a CLAP encoder or a
  ``bert_score.BERTScorer``); loading lives in :mod:`musiceval.encoders`, audio decoding in
  :mod:`musiceval.audio`.
- **Several references per item** (captions: Song Describer and MusicCaps have several per clip):
  every reference argument takes, per candidate, either one string or a non-empty sequence of
  strings. The multi-reference rule is the max over the item's references, the rule of the
  bert-score library of Zhang et al. (2020) (``BERTScorer.score(cands, [[r1, r2], ...])`` keeps
  "the *best* score among all references"), applied to every embedding metric: CLAPText and
  sentence cosine take the max cosine over references; BERTScore takes bert-score's own
  per-column max (P, R and F1 each maximised over the references, so F1 is the max F1). A
  candidate is credited for matching any one valid description. The lexical metrics keep the
  multi-reference rules of their own definitions (BLEU clips counts by the max over references,
  ROUGE-L takes the max, CIDEr-D the mean; see :mod:`musiceval.metrics.lexical`).
- :func:`text_similarity` embeds every *distinct* string of candidates and references once per
  call (through :func:`musiceval.encoders.base.embed_distinct`, with the on-disk
  :class:`~musiceval.encoders.embedding_cache.EmbeddingCache` when given), then takes row-wise cosines.
  Encoders return L2-normalised rows, so cosine is a dot product; values lie in [-1, 1].
- :func:`~musiceval.encoders.base.embed_audio` embeds every distinct waveform once, keyed in the
  same cache by (``<encoder id>#audio``, ``audio_content_hash`` (``musiceval/audio.py``) of the samples and rate).
- Empty (or whitespace-only) candidates score 0.0 without being embedded: an empty answer
  states nothing, and an encoder's embedding of "" is an artefact of its special tokens, not a
  meaning. References must be non-empty: callers validate them and report a per-item failure.

Metrics
-------
- **CLAPText** (c, R) = max_{r in R} cos(CLAP_text(c), CLAP_text(r)): :func:`text_similarity`
  with a CLAP text encoder (``clap:laion/larger_clap_music``).
- **Sentence cosine**: the same with a sentence-transformers encoder (``minilm``), the
  general-purpose control that shows what CLAP's music-aware text tower adds.
- **CLAPAudio** (c, a) = cos(CLAP_text(c), CLAP_audio(a)): reference-free, for runs with audio
  (:func:`audio_similarity`; :func:`audio_text_similarity` on precomputed embeddings). No
  published metric does this; it needs no reference.
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

from musiceval.encoders.base import TextEncoder, embed_by_length
from musiceval.encoders.embedding_cache import EmbeddingCache

#: per candidate: one reference, or several (the max over them is taken)
References = Sequence[str | Sequence[str]]


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


def reference_groups(references: References, n: int) -> list[list[str]]:
    """Each candidate's references as a list; ``ValueError`` naming an empty reference or group."""
    if len(references) != n:
        raise ValueError(f"{n} candidates but {len(references)} references")
    groups = [[r] if isinstance(r, str) else list(r) for r in references]
    for k, group in enumerate(groups):
        if not group:
            raise ValueError(f"reference {k} is an empty list; the item cannot be scored")
        for r in group:
            if not isinstance(r, str) or _is_empty(r):
                raise ValueError(f"reference {k} is empty; the item cannot be scored")
    return groups


def text_similarity(
    encoder: TextEncoder,
    candidates: Sequence[str],
    references: References,
    *,
    cache: EmbeddingCache | None = None,
) -> np.ndarray:
    """Max cosine of each candidate's embedding with its references' (CLAPText, sentence cosine).

    Parameters
    ----------
    encoder : TextEncoder
        Returns L2-normalised rows.
    candidates : sequence of str
    references : sequence of (str or sequence of str)
        Aligned with ``candidates``: one reference or several per candidate, all non-empty.
        With several, the score is the max cosine over them (module docstring: the
        multi-reference rule of bert-score).
    cache : EmbeddingCache, optional
        On-disk cache keyed by (encoder id, text hash).

    Returns
    -------
    numpy.ndarray
        One value in [-1, 1] per candidate; 0.0 where the candidate is empty.
    """
    groups = reference_groups(references, len(candidates))
    keep = [k for k, c in enumerate(candidates) if not _is_empty(c)]
    out = np.zeros(len(candidates))
    if not keep:
        return out
    refs = [r for k in keep for r in groups[k]]
    emb = embed_by_length(encoder, [candidates[k] for k in keep] + refs, cache=cache)
    owner = np.repeat(np.arange(len(keep)), [len(groups[k]) for k in keep])
    cos = cosine_rows(emb[: len(keep)][owner], emb[len(keep) :])
    best = np.full(len(keep), -np.inf)
    np.maximum.at(best, owner, cos)
    out[keep] = best
    return out


def audio_text_similarity(text_embeddings: np.ndarray, audio_embeddings: np.ndarray) -> np.ndarray:
    """CLAPAudio on precomputed embeddings: row-wise cosine of answer text and clip audio, in [-1, 1]."""
    return cosine_rows(text_embeddings, audio_embeddings)


def audio_similarity(encoder: Any, candidates: Sequence[str], audio_embeddings: np.ndarray, *,
                     cache: EmbeddingCache | None = None) -> np.ndarray:
    """CLAPAudio: cosine of each answer's CLAP text embedding with its clip's CLAP audio embedding.

    Reference-free: how well the answer describes the audio in CLAP's joint space.

    Parameters
    ----------
    encoder : ClapEncoder
        Its text tower embeds the answers (L2-normalised rows, each distinct text once).
    candidates : sequence of str
    audio_embeddings : numpy.ndarray
        ``(len(candidates), dim)``: row k embeds the clip answer k is about (:func:`embed_audio`).
    cache : EmbeddingCache, optional

    Returns
    -------
    numpy.ndarray
        One value in [-1, 1] per candidate; 0.0 where the candidate is empty (never embedded).
    """
    audio_embeddings = np.asarray(audio_embeddings)
    if audio_embeddings.ndim != 2 or len(audio_embeddings) != len(candidates):
        raise ValueError(f"{len(candidates)} candidates but audio embeddings of shape {audio_embeddings.shape}")
    keep = [k for k, c in enumerate(candidates) if not _is_empty(c)]
    out = np.zeros(len(candidates))
    if keep:
        text_emb = embed_by_length(encoder, [candidates[k] for k in keep], cache=cache)
        out[keep] = audio_text_similarity(text_emb, audio_embeddings[keep])
    return out


def bertscore(scorer: Any, candidates: Sequence[str], references: References, *, batch_size: int = 64) -> dict[str, np.ndarray]:
    """BERTScore P, R, F1 per candidate with a configured ``bert_score.BERTScorer``.

    Build the scorer with the model and layer to use, e.g. ``BERTScorer(model_type=<dir>,
    num_layers=6)``; pass ``rescale_with_baseline=True, baseline_path=<tsv>`` for rescaled
    values (then values may leave [0, 1]). ``references`` holds one string or several per
    candidate; they go to bert-score as reference lists, so P, R and F1 are each bert-score's
    max over the candidate's references (its multi-reference rule; rescaling comes after the
    max and is monotone). Empty candidates score 0.0 on P, R and F1 (bert-score itself would
    return a meaningless value from the special tokens).
    """
    groups = reference_groups(references, len(candidates))
    keep = [k for k, c in enumerate(candidates) if not _is_empty(c)]
    out = {name: np.zeros(len(candidates)) for name in ("precision", "recall", "f1")}
    if keep:
        p, r, f = scorer.score([candidates[k] for k in keep], [groups[k] for k in keep], batch_size=batch_size)
        for name, values in zip(("precision", "recall", "f1"), (p, r, f)):
            out[name][keep] = values.detach().cpu().numpy().astype(float)
    return out
