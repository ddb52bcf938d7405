"""The text-encoder protocol, the registry of encoder names and the distinct-text embedding path.

Conventions
-----------
- ``encode(texts)`` returns a float32 array of shape ``(len(texts), dim)`` whose rows are
  L2-normalised, so cosine similarity is a dot product.
- :func:`embed_distinct` embeds each distinct string once per call (references are shared by all
  five conditions; prompts are shared by thousands of triplets) and maps rows back.
- :class:`EmbeddingCache` keeps embeddings on disk keyed by (encoder id, sha256 of the text), so a
  rerun, or another xdist worker, never embeds a string twice. Writes are file-locked.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Callable, Iterable, Protocol, Sequence, runtime_checkable

import numpy as np
from filelock import FileLock


@runtime_checkable
class TextEncoder(Protocol):
    """Anything that maps strings to L2-normalised vectors."""

    #: A stable identifier of the weights (hub id or resolved path plus pooling); the cache key.
    id: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:  # pragma: no cover - protocol
        ...


_REGISTRY: dict[str, Callable[[str], TextEncoder]] = {}


def register_encoder(prefix: str) -> Callable[[Callable[[str], TextEncoder]], Callable[[str], TextEncoder]]:
    """Register a factory for encoder specs ``"<prefix>"`` or ``"<prefix>:<argument>"``.

    >>> @register_encoder("mine")            # doctest: +SKIP
    ... def _load(arg): return MyEncoder(arg)
    """

    def deco(factory: Callable[[str], TextEncoder]) -> Callable[[str], TextEncoder]:
        _REGISTRY[prefix] = factory
        return factory

    return deco


def load_text_encoder(spec: str) -> TextEncoder:
    """Resolve an encoder spec.

    ``minilm`` is the bundled offline all-MiniLM-L6-v2; ``st:<dir-or-hub-id>`` (or a bare
    directory / hub id) is any sentence-transformers model with mean pooling;
    ``clap:<dir-or-hub-id-or-.pt>`` is the CLAP text tower. Other prefixes are added with
    :func:`register_encoder`.
    """
    # Import the modules that register the built-in prefixes.
    from musiceval.encoders import bge, gte, layer, sentence  # noqa: F401

    try:  # the CLAP backend is optional (it lives with the free-form metrics)
        from musiceval.encoders import clap  # noqa: F401
    except ImportError:
        pass
    prefix, _, arg = spec.partition(":")
    if prefix in _REGISTRY:
        return _REGISTRY[prefix](arg)
    return _REGISTRY["st"](spec)


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingCache:
    """On-disk embedding cache: one ``.npy`` per (encoder id, text hash), sharded by prefix.

    Safe under concurrent xdist workers: each write goes to a temporary file renamed into place
    under a file lock, so a reader never sees a torn array.
    """

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    def _path(self, encoder_id: str, text: str) -> Path:
        enc = hashlib.sha256(encoder_id.encode()).hexdigest()[:16]
        key = text_key(text)
        return self.root / enc / key[:2] / f"{key}.npy"

    def get(self, encoder_id: str, text: str) -> np.ndarray | None:
        path = self._path(encoder_id, text)
        if not path.exists():
            return None
        try:
            return np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            return None  # a corrupt entry is recomputed, not trusted

    def put(self, encoder_id: str, text: str, vector: np.ndarray) -> None:
        path = self._path(encoder_id, text)
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
            np.save(tmp, np.asarray(vector, dtype=np.float32), allow_pickle=False)
            os.replace(tmp, path)


def _distinct_rows(cache_id: str, keys: Sequence[str], payloads: Sequence, encode: Callable[[list], object],
                   cache: EmbeddingCache | None) -> np.ndarray:
    """One row per key, in order: each distinct key read from ``cache`` under ``cache_id`` or,
    when absent, encoded once (with the others missing) from its payload and stored."""
    vectors: dict[str, np.ndarray] = {}
    missing: dict[str, object] = {}
    for key, payload in zip(keys, payloads):
        if key in vectors or key in missing:
            continue
        hit = cache.get(cache_id, key) if cache is not None else None
        if hit is None:
            missing[key] = payload
        else:
            vectors[key] = hit
    if missing:
        new = np.asarray(encode(list(missing.values())), dtype=np.float32)
        for key, v in zip(missing, new):
            vectors[key] = v
            if cache is not None:
                cache.put(cache_id, key, v)
    if not keys:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack([vectors[k] for k in keys])


def embed_distinct(
    encoder: TextEncoder,
    texts: Iterable[str],
    *,
    cache: EmbeddingCache | None = None,
) -> np.ndarray:
    """Embed ``texts``, running the encoder once per distinct string not already cached.

    Returns an array with one L2-normalised row per input text, in input order.
    """
    texts = list(texts)
    return _distinct_rows(encoder.id, texts, texts, encoder.encode, cache)


def embed_audio(encoder, waveforms: Sequence[np.ndarray], sampling_rate: int, *,
                cache: EmbeddingCache | None = None) -> np.ndarray:
    """CLAP audio embeddings of mono clips, each distinct clip through the audio tower once.

    Clips are keyed by :func:`musiceval.data.audio.audio_content_hash` (samples and rate), in
    ``cache`` under the id ``<encoder id>#audio``. ``ValueError`` names an empty or non-mono clip.
    """
    from musiceval.data.audio import audio_content_hash

    for k, w in enumerate(waveforms):
        if np.asarray(w).ndim != 1 or np.asarray(w).size == 0:
            raise ValueError(f"waveform {k} must be a non-empty mono 1-d array")
    hashes = [audio_content_hash(w, sampling_rate) for w in waveforms]
    return _distinct_rows(f"{encoder.id}#audio", hashes, list(waveforms),
                          lambda clips: encoder.encode_audio(clips, sampling_rate), cache)


def embed_by_length(encoder: TextEncoder, texts: Sequence[str], *, cache: EmbeddingCache | None = None) -> np.ndarray:
    """:func:`embed_distinct` with the texts passed shortest first, so each batch pads little;
    rows come back in input order."""
    texts = list(texts)
    order = sorted(range(len(texts)), key=lambda k: len(texts[k]))
    rows = embed_distinct(encoder, [texts[k] for k in order], cache=cache)
    out = np.empty_like(rows)
    out[order] = rows
    return out


def l2_normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norms, 1e-12)
