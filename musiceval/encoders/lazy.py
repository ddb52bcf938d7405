""":class:`LazyEncoder`: an encoder spec whose model loads on the first ``encode``.

Scoring with a warm :class:`~musiceval.encoders.base.EmbeddingCache` then loads no model at all:
:func:`~musiceval.encoders.base.embed_distinct` (and ``embed_by_length`` / ``embed_audio``) call
``encode`` only for texts missing from the cache.

>>> enc = LazyEncoder("minilm")          # doctest: +SKIP
>>> embed_distinct(enc, texts, cache=EmbeddingCache(".musiceval/cache/embeddings"))  # doctest: +SKIP
>>> enc.loaded                           # False when every text was cached   # doctest: +SKIP

The cache id of a lazy encoder is known before loading: ``lazy:<spec>`` with directory arguments
resolved to absolute paths (pass ``id=`` to share rows with an eagerly loaded encoder whose
``id`` you know, e.g. ``LazyEncoder("minilm", id="sentence-transformers/all-MiniLM-L6-v2")``).
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["LazyEncoder"]


def _canonical(spec: str) -> str:
    prefix, sep, arg = spec.partition(":")
    if sep and arg and os.path.isdir(arg):
        return f"{prefix}:{os.path.abspath(arg)}"
    if not sep and os.path.isdir(spec):
        return os.path.abspath(spec)
    return spec


class LazyEncoder:
    """A :class:`~musiceval.encoders.base.TextEncoder` that resolves ``spec`` on first use.

    Parameters
    ----------
    spec : str
        An encoder spec for :func:`~musiceval.encoders.base.load_text_encoder` (``minilm``,
        ``st:<dir>``, ``clap:<dir>`` ...).
    id : str, optional
        The cache id; default ``lazy:<canonical spec>``.
    loader : callable, optional
        ``spec -> encoder`` (default :func:`~musiceval.encoders.base.load_text_encoder`).
    """

    def __init__(self, spec: str, *, id: str | None = None, loader: Callable[[str], Any] | None = None):
        self.spec = spec
        self.id = id or f"lazy:{_canonical(spec)}"
        self._loader = loader
        self._encoder: Any = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """True once the model was loaded (some text was not in the cache)."""
        return self._encoder is not None

    def load(self) -> Any:
        with self._lock:
            if self._encoder is None:
                if self._loader is None:
                    from musiceval.encoders.base import load_text_encoder

                    self._loader = load_text_encoder
                self._encoder = self._loader(self.spec)
        return self._encoder

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.load().encode(texts)

    def encode_audio(self, waveforms: Sequence[np.ndarray], sampling_rate: int) -> np.ndarray:
        return self.load().encode_audio(waveforms, sampling_rate)

    def __getattr__(self, name: str) -> Any:  # other attributes (feature_extractor, n_encoded) load the model
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.load(), name)
