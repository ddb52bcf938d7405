""":class:`LazyEncoder`: an encoder spec whose model loads on the first ``encode``.

Scoring with a warm :class:`~musiceval.encoders.embedding_cache.EmbeddingCache` then loads no model at all:
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

__all__ = ["LazyEncoder", "known_encoder_facts", "known_encoder_id", "register_encoder_id"]

#: spec prefix -> (argument -> the ``id`` its loaded encoder will have), for ids known before loading
_KNOWN_IDS: dict[str, Callable[[str], str]] = {}


def _canonical(spec: str) -> str:
    prefix, sep, arg = spec.partition(":")
    if sep and arg and os.path.isdir(arg):
        return f"{prefix}:{os.path.abspath(arg)}"
    if not sep and os.path.isdir(spec):
        return os.path.abspath(spec)
    return spec


def register_encoder_id(prefix: str) -> Callable[[Callable[[str], str]], Callable[[str], str]]:
    """Register the rule giving the ``id`` of a ``"<prefix>:<argument>"`` encoder without loading it.

    The rule must return exactly the ``id`` the registered factory's encoder carries (the cache key);
    ``tests/encoders/test_lazy_ids.py`` checks each built-in rule against a loaded encoder.
    """

    def deco(rule: Callable[[str], str]) -> Callable[[str], str]:
        _KNOWN_IDS[prefix] = rule
        return rule

    return deco


def _path_or_name(arg: str) -> str:
    return os.path.abspath(arg) if os.path.isdir(arg) else arg


@register_encoder_id("minilm")
def _minilm_id(_: str) -> str:
    return "sentence-transformers/all-MiniLM-L6-v2"  # musiceval.encoders.sentence._load_minilm


@register_encoder_id("st")
def _st_id(arg: str) -> str:
    return f"meanpool:{_path_or_name(arg)}"  # MeanPoolingEncoder


@register_encoder_id("bge")
def _bge_id(arg: str) -> str:
    from musiceval.encoders.bge import BGE_LARGE_EN

    return f"clspool:{_path_or_name(arg or BGE_LARGE_EN)}"  # ClsPoolingEncoder


@register_encoder_id("gte")
def _gte_id(arg: str) -> str:
    from musiceval.encoders.gte import GTE_QWEN2_7B

    return f"lasttoken:{_path_or_name(arg or GTE_QWEN2_7B)}"  # GteEncoder


def _weights_of(spec: str) -> str | None:
    """The directory or hub id whose weights ``load_text_encoder(spec)`` loads, for the built-in
    prefixes whose id is known before loading; None otherwise."""
    prefix, sep, arg = spec.partition(":")
    if prefix == "minilm":
        try:
            from musiceval.encoders.sentence import bundled_minilm_path

            return bundled_minilm_path()
        except ImportError:
            return None
    if prefix == "bge":
        from musiceval.encoders.bge import BGE_LARGE_EN

        return arg or BGE_LARGE_EN
    if prefix == "gte":
        from musiceval.encoders.gte import GTE_QWEN2_7B

        return arg or GTE_QWEN2_7B
    if prefix == "st":
        return arg
    return spec if not sep and os.path.isdir(spec) else None


def known_encoder_facts(spec: str) -> tuple[int | None, str | None]:
    """``(dimension, weights revision)`` that ``load_text_encoder(spec)``'s encoder will state, read
    from the weights' files without loading them (:func:`musiceval.encoders.facts.model_facts`);
    ``(None, None)`` for a spec whose weights are not known before loading."""
    from musiceval.encoders.facts import model_facts

    weights = _weights_of(spec)
    return model_facts(weights) if weights else (None, None)


def known_encoder_id(spec: str) -> str | None:
    """The ``id`` that ``load_text_encoder(spec)`` will give, without loading anything; ``None`` when
    no rule is registered for the spec's prefix (the caller then loads the encoder to learn it).

    A bare directory is a sentence-transformers model (``st:``), as in ``load_text_encoder``.

    >>> known_encoder_id("minilm")
    'sentence-transformers/all-MiniLM-L6-v2'
    """
    prefix, sep, arg = spec.partition(":")
    if prefix in _KNOWN_IDS:
        return _KNOWN_IDS[prefix](arg)
    if not sep and os.path.isdir(spec):
        return _KNOWN_IDS["st"](spec)
    return None


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
    facts : (dimension, revision), optional
        What the loaded encoder will state about its rows, known before loading; default: read
        from the weights of a built-in ``spec`` (:func:`known_encoder_facts`) without a
        ``loader``, unknown until loaded with one. A loader that loads ``spec``'s own weights
        passes ``known_encoder_facts(spec)``: rows written before and after the model loads then
        carry the same revision, and the cache serves the first to the second.
    """

    def __init__(self, spec: str, *, id: str | None = None, loader: Callable[[str], Any] | None = None,
                 facts: tuple[int | None, str | None] | None = None):
        self.spec = spec
        self.id = id or f"lazy:{_canonical(spec)}"
        self._loader = loader
        self._encoder: Any = None
        self._known = facts
        self._lock = threading.Lock()

    @property
    def dim(self) -> int | None:
        """The dimension of its rows, known before loading for the built-in specs (else None until loaded)."""
        if self._encoder is not None:
            return getattr(self._encoder, "dim", None)
        return self._facts()[0]

    @property
    def revision(self) -> str | None:
        """The weights' revision, known before loading for the built-in specs."""
        if self._encoder is not None:
            return getattr(self._encoder, "revision", None)
        return self._facts()[1]

    def _facts(self) -> tuple[int | None, str | None]:
        if self._known is None:
            self._known = known_encoder_facts(self.spec) if self._loader is None else (None, None)
        return self._known

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
