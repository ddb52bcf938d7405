"""The lazily loaded models of the embedding metrics (sentence cosine, CLAPText, BERTScore, FENSE),
shared by every protocol that scores them (the free-form protocol; the MIR protocol's captioning
and per-tag BERTScore): each model loads at the first text missing from the cache, once per run."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np


class _MemoryCache:
    """``EmbeddingCache``'s get/put interface over a dict (runs without a cache directory)."""

    def __init__(self) -> None:
        self._store: dict[tuple[str, str], np.ndarray] = {}
        self._shapes: dict[str, tuple[int, ...]] = {}  # only this run's encoders write here

    def get(self, encoder_id: str, text: str) -> np.ndarray | None:
        return self._store.get((encoder_id, text))

    def put(self, encoder_id: str, text: str, vector: np.ndarray) -> None:
        self._store[(encoder_id, text)] = vector

    def row_shape(self, encoder_id: str) -> tuple[int, ...] | None:
        return self._shapes.get(encoder_id)

    def set_row_shape(self, encoder_id: str, shape: tuple[int, ...]) -> None:
        self._shapes[encoder_id] = tuple(shape)


class RowsEncoder:
    """A ``texts -> values`` model with an ``id`` (FENSE's loaders) as a text encoder: ``encode``
    returns one float32 row per text (a column for a scalar per text), so the model's outputs go
    through :func:`~musiceval.encoders.base.embed_distinct` and the embedding cache like any
    encoder's. ``n_encoded`` counts the texts sent to the model."""

    def __init__(self, fn: Any):
        self.fn, self.id, self.n_encoded = fn, str(fn.id), 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        self.n_encoded += len(texts)
        return np.asarray(self.fn(texts), dtype=np.float32).reshape(len(texts), -1)


@dataclass
class Models:
    """Lazily loaded models of the embedding metrics (loaded only when a metric asks)."""

    sentence_encoder: str = "minilm"
    clap: str | None = None
    bertscore_model: str = "minilm"
    bertscore_layers: int = 6
    bertscore_baseline: str | None = None
    cache_dir: str | None = None
    #: an ``EmbeddingCache`` object (e.g. the pytest plugin's, shared by workers); wins over cache_dir
    embedding_cache: Any = None
    _loaded: dict[str, Any] = field(default_factory=dict)
    #: the models that could not be loaded, and why
    _failed: dict[str, Exception] = field(default_factory=dict)

    def _once(self, kind: str, load: Callable[[], Any]) -> Any:
        """``load()``'s model for ``kind``, loaded at the first ask. A model that cannot be loaded
        (its weights or package absent: ``FileNotFoundError``, ``ImportError``) raises the same
        error at every later ask without a second try: a run asks for each model once per metric
        and condition, and each try of an absent hub model asks the hub again (and, offline
        without ``HF_HUB_OFFLINE=1``, waits out its retries)."""
        if kind in self._failed:
            raise self._failed[kind]
        if kind not in self._loaded:
            try:
                self._loaded[kind] = load()
            except (FileNotFoundError, ImportError) as exc:
                self._failed[kind] = exc
                raise
        return self._loaded[kind]

    def cache(self):
        """The on-disk cache when configured, else an in-memory one for this run: either way a
        text shared by several conditions (every reference) is embedded once per run."""
        from musiceval.encoders.embedding_cache import EmbeddingCache

        if self.embedding_cache is None:
            self.embedding_cache = EmbeddingCache(self.cache_dir) if self.cache_dir else _MemoryCache()
        return self.embedding_cache

    def lexical_cache(self):
        """The :class:`~musiceval.metrics.lexical_cache.LexicalScoreCache` in the on-disk embedding
        cache's folder, or None (no cache folder: lexical scores are computed every run)."""
        if "lexical" not in self._loaded:
            from musiceval.metrics.lexical_cache import LexicalScoreCache

            root = getattr(self.cache(), "root", None)
            self._loaded["lexical"] = LexicalScoreCache(root) if root is not None else None
        return self._loaded["lexical"]

    def encoder(self, kind: str):
        """The sentence (``"sentence"``) or CLAP (``"clap"``) text encoder. One whose cache id is
        known before loading (the built-in specs: :func:`~musiceval.encoders.lazy.known_encoder_id`)
        loads its model at the first text missing from the cache
        (:class:`~musiceval.encoders.lazy.LazyEncoder`), so a run whose vectors are all cached
        loads none; the others load now, so a missing model is named here."""

        def load():
            from musiceval.encoders.base import load_text_encoder
            from musiceval.encoders.lazy import LazyEncoder, known_encoder_id

            spec = self.sentence_encoder if kind == "sentence" else f"clap:{self.clap or ''}"
            known = known_encoder_id(spec)
            return LazyEncoder(spec, id=known) if known else load_text_encoder(spec)

        return self._once(kind, load)

    @property
    def pools_sentence_vectors(self) -> bool:
        """Whether BERTScore runs on the last layer of sentence cosine's own model (the bundled
        all-MiniLM-L6-v2, layer 6): then the token embeddings BERTScore computes also give sentence
        cosine's vectors (:class:`~musiceval.encoders.bertscore_cache.TokenCachedBERTScorer`'s
        ``pooled_id``), one forward pass per text for both metrics."""
        return self.sentence_encoder == "minilm" and self.bertscore_model == "minilm" and self.bertscore_layers == 6

    def fense(self, kind: str):
        """FENSE's Sentence-BERT (``"fense"``) or error detector (``"fense-error"``), loaded once from
        ``$MUSICEVAL_FENSE_SBERT`` / ``$MUSICEVAL_FENSE_ECHECKER`` or their published names, as an
        encoder (``id``, ``encode``: one row per text; the detector's row is its p(error)) for
        :func:`~musiceval.encoders.base.embed_distinct` and this run's cache."""

        def load():
            from musiceval.metrics import fense_models

            if kind == "fense":
                return RowsEncoder(fense_models.load_sbert(os.environ.get("MUSICEVAL_FENSE_SBERT", fense_models.SBERT_MODEL)))
            return RowsEncoder(fense_models.load_echecker(os.environ.get("MUSICEVAL_FENSE_ECHECKER", fense_models.ECHECKER)))

        return self._once(kind, load)

    def audio_encoder(self):
        """The CLAP encoder of clap_text, which must also carry its audio feature extractor."""
        encoder = self.encoder("clap")
        if getattr(encoder, "feature_extractor", None) is None:
            from musiceval.encoders.clap import CLAP_DOWNLOAD

            raise FileNotFoundError(f"{encoder.id}: no audio feature extractor (preprocessor_config.json) next to the "
                                    f"CLAP weights; clap_audio needs the full model: {CLAP_DOWNLOAD}")
        return encoder

    def bertscorer(self):
        if "bertscore" not in self._loaded:
            from musiceval.encoders.bertscore_cache import lazy_bertscorer, model_fix

            model = self.bertscore_model
            if model == "minilm":
                from musiceval.encoders.sentence import bundled_minilm_path

                model = bundled_minilm_path()
            kwargs: dict[str, Any] = {"model_type": model, "num_layers": self.bertscore_layers}
            if self.bertscore_baseline:
                kwargs.update(lang="en", rescale_with_baseline=True, baseline_path=self.bertscore_baseline)
            try:  # the model loads when a text is missing from the cache: a warm run loads none
                scorer = lazy_bertscorer(**kwargs)
            except OSError as exc:
                raise FileNotFoundError(f"BERTScore model {model!r} not found ({exc.__class__.__name__}); {model_fix(model)}, "
                                        "or use --bertscore-model minilm") from exc
            from musiceval.encoders.bertscore_cache import TokenCachedBERTScorer

            # token embeddings cached per distinct text: each text through the model once, across
            # conditions, metrics and runs (a warm rerun embeds nothing); on the bundled MiniLM's
            # last layer they also give sentence_cosine's vectors, so MiniLM sees each text once
            self._loaded["bertscore"] = TokenCachedBERTScorer(scorer, self.cache(),
                                                              pooled_id=MINILM_ID if self.pools_sentence_vectors else None)
        return self._loaded["bertscore"]

    def describe(self) -> dict[str, Any]:
        clap = self.clap or os.environ.get("MUSICEVAL_CLAP") or "laion/larger_clap_music"
        return {"sentence_cosine": self.sentence_encoder, "clap_text": clap, "clap_audio": clap,
                "bertscore": f"{self.bertscore_model} (layer {self.bertscore_layers}{', rescaled' if self.bertscore_baseline else ''})"}


#: the sentence encoder id of the bundled all-MiniLM-L6-v2 (musiceval.encoders.sentence._load_minilm)
MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
