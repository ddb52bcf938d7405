"""The text-encoder protocol, the registry of encoder names and the distinct-text embedding path.

Conventions
-----------
- ``encode(texts)`` returns a float32 array of shape ``(len(texts), dim)`` whose rows are
  L2-normalised, so cosine similarity is a dot product.
- :func:`embed_distinct` embeds each distinct string once per call (references are shared by all
  five conditions; prompts are shared by thousands of triplets) and maps rows back.
- :class:`~musiceval.encoders.embedding_cache.EmbeddingCache` keeps embeddings on disk keyed by
  (encoder id, sha256 of the text) in one SQLite file (WAL mode), so a rerun, or another xdist
  worker, never embeds a string twice; rows are validated (finiteness, the shape the encoder's own
  rows have, one row checked against the encoder when no shape is recorded) on read.
- :class:`LazyEncoder` wraps an encoder spec and loads the model on its first ``encode``: with a
  warm cache, scoring never loads a model.
"""
from __future__ import annotations

from typing import Callable, Iterable, Protocol, Sequence, runtime_checkable

import numpy as np

from musiceval.encoders.embedding_cache import EmbeddingCache, shape_fits
from musiceval.registry import Registry


@runtime_checkable
class TextEncoder(Protocol):
    """Anything that maps strings to L2-normalised vectors."""

    #: A stable identifier of the weights (hub id or resolved path plus pooling); the cache key.
    id: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:  # pragma: no cover - protocol
        ...


#: encoder factories by spec prefix (``st``, ``bge``, ``gte``, ``layer``, ``clap`` ...)
ENCODERS: Registry[Callable[[str], TextEncoder]] = Registry(
    "text encoder",
    builtin_modules=tuple(f"musiceval.encoders.{m}" for m in ("bge", "gte", "layer", "sentence")),
    entry_point_group="musiceval.encoders",
    lazy_modules={"clap": "musiceval.encoders.clap"},
)


def register_encoder(prefix: str) -> Callable[[Callable[[str], TextEncoder]], Callable[[str], TextEncoder]]:
    """Register a factory for encoder specs ``"<prefix>"`` or ``"<prefix>:<argument>"``.

    >>> @register_encoder("mine")            # doctest: +SKIP
    ... def _load(arg): return MyEncoder(arg)
    """

    def deco(factory: Callable[[str], TextEncoder]) -> Callable[[str], TextEncoder]:
        ENCODERS.register(prefix, factory, replace=True)
        return factory

    return deco


def load_text_encoder(spec: str) -> TextEncoder:
    """Resolve an encoder spec.

    ``minilm`` is the bundled offline all-MiniLM-L6-v2; ``st:<dir-or-hub-id>`` (or a bare
    directory / hub id) is any sentence-transformers model with mean pooling;
    ``clap:<dir-or-hub-id-or-.pt>`` is the CLAP text tower. Other prefixes are added with
    :func:`register_encoder`.
    """
    prefix, _, arg = spec.partition(":")
    if prefix in ENCODERS:
        return ENCODERS.get(prefix)(arg)
    return ENCODERS.get("st")(spec)


def get_rows(cache, cache_id: str, keys: list[str], *, shape: tuple[int, ...] | None = None,
             revision: str | None = None) -> dict[str, np.ndarray]:
    """``{key: row}`` for the keys ``cache`` holds under ``cache_id`` (``get_many`` when it has one);
    with ``shape``, rows of another shape are misses (``-1``: any length on that axis); with
    ``revision`` (an :class:`EmbeddingCache`), so are rows written under other weights."""
    if cache is None or not keys:
        return {}
    if isinstance(cache, EmbeddingCache):
        return cache.get_many(cache_id, keys, shape=shape, revision=revision)
    if hasattr(cache, "get_many"):
        rows = cache.get_many(cache_id, keys, shape=shape) if shape is not None else cache.get_many(cache_id, keys)
    else:
        hits = {k: cache.get(cache_id, k) for k in keys}
        rows = {k: v for k, v in hits.items() if v is not None}
    if shape is None:
        return rows
    return {k: v for k, v in rows.items() if shape_fits(np.shape(v), shape)}


def put_rows(cache, cache_id: str, rows: list[tuple[str, np.ndarray]], *, revision: str | None = None) -> None:
    """Store ``(key, row)`` pairs in ``cache`` under ``cache_id`` (``put_many`` when it has one), with
    the weights' ``revision`` (an :class:`EmbeddingCache` records it)."""
    if cache is None or not rows:
        return
    if isinstance(cache, EmbeddingCache):
        cache.put_many(cache_id, rows, revision=revision)
    elif hasattr(cache, "put_many"):
        cache.put_many(cache_id, rows)
    else:
        for key, v in rows:
            cache.put(cache_id, key, v)


def row_signature(row: np.ndarray) -> tuple[int, ...]:
    """The shape every row of one encoder shares: a vector's shape; for a table (token rows), any
    number of rows (``-1``) of a fixed width."""
    shape = tuple(int(d) for d in np.shape(row))
    return shape if len(shape) < 2 else (-1, *shape[1:])


def recorded_row_shape(cache, cache_id: str) -> tuple[int, ...] | None:
    """The row shape ``cache`` recorded for ``cache_id`` (None: none recorded, or a cache that
    keeps no records)."""
    get = getattr(cache, "row_shape", None)
    return get(cache_id) if get is not None else None


def stated_facts(encoder) -> tuple[tuple[int, ...] | None, str | None]:
    """``(row shape, weights revision)`` an encoder states about its rows without computing one (its
    ``dim`` and ``revision`` attributes: :mod:`musiceval.encoders.facts`); None for what it does not
    state. Rows of another shape or revision are never served from the cache."""
    dim, revision = getattr(encoder, "dim", None), getattr(encoder, "revision", None)
    shape = (dim,) if isinstance(dim, int) and not isinstance(dim, bool) and dim > 0 else None
    return shape, revision if isinstance(revision, str) else None


def warn_misstated(cache_id: str, stated: tuple[int, ...], computed: tuple[int, ...]) -> None:
    """An encoder whose rows do not have the shape it states: its cached rows would be refused on
    every run; said once, and the computed shape is used."""
    import warnings

    warnings.warn(f"encoder {cache_id} states rows of shape {stated} but computes {computed}; its cached rows are "
                  "checked against what it computes; fix its `dim`", stacklevel=3)


def record_row_shape(cache, cache_id: str, shape: tuple[int, ...]) -> None:
    """Record the shape of the rows the encoder behind ``cache_id`` has just computed."""
    put = getattr(cache, "set_row_shape", None)
    if put is not None:
        put(cache_id, shape)


def same_row(fresh: np.ndarray, cached: np.ndarray, *, atol: float = 1e-3) -> bool:
    """Whether a cached row is the encoder's own: same shape, values equal up to the last bits
    that another padded batch changes (another encoder's rows differ far more)."""
    fresh, cached = np.asarray(fresh, np.float32), np.asarray(cached, np.float32)
    return fresh.shape == cached.shape and bool(np.allclose(fresh, cached, atol=atol, rtol=atol))


def _distinct_rows(cache_id: str, keys: Sequence[str], payloads: Sequence, encode: Callable[[list], object],
                   cache: EmbeddingCache | None, *, stated: tuple[int, ...] | None = None,
                   revision: str | None = None) -> np.ndarray:
    """One row per key, in order: each distinct key read from ``cache`` under ``cache_id`` or,
    when absent, encoded once (with the others missing) from its payload and stored.

    A cached row is used only when it is the encoder's own (docs/hardening.md): of the shape the
    encoder states (``stated``, from its weights' config: :func:`stated_facts`), else of the shape
    the cache recorded for the rows the encoder computed (:func:`record_row_shape`), and written
    under the weights' ``revision`` when the encoder states one; the store refuses rows of an
    earlier format or edited after they were written. Under an id with no recorded shape (nothing
    says the encoder wrote these rows: a store written before shapes were recorded, rows put there
    by other code, an edited or a foreign store) one cached row is encoded again and compared
    (:func:`same_row`): when it differs, every cached row under the id is another encoder's and is
    recomputed. ``encode`` runs only when some key is missing or that check
    is due, so a lazily loaded encoder (:class:`LazyEncoder`) on a cache it wrote loads no model.
    """
    import warnings

    payload_of: dict[str, object] = {}
    for key, payload in zip(keys, payloads):
        payload_of.setdefault(key, payload)

    def run(todo: list[str]) -> dict[str, np.ndarray]:
        return dict(zip(todo, np.asarray(encode([payload_of[k] for k in todo]), dtype=np.float32))) if todo else {}

    recorded = recorded_row_shape(cache, cache_id)
    shape = stated or recorded
    vectors = get_rows(cache, cache_id, list(payload_of), shape=shape, revision=revision)
    fresh: dict[str, np.ndarray] = {}
    if vectors and recorded is None:  # nothing says the encoder wrote these rows: check one
        probe = next(iter(vectors))
        fresh = run([probe])
        if not same_row(fresh[probe], vectors[probe]):
            warnings.warn(f"embedding cache {getattr(cache, 'path', cache)}: the rows under {cache_id} are not this "
                          "encoder's (a cached row differs from the one it computes); recomputed and overwritten",
                          stacklevel=3)
            vectors = {}
    fresh.update(run([k for k in payload_of if k not in vectors and k not in fresh]))
    if fresh:
        shape = row_signature(next(iter(fresh.values())))
        if stated is not None and not shape_fits(shape, stated):
            warn_misstated(cache_id, stated, shape)
        # rows cached under the shape the encoder had before (its weights changed under the same id)
        fresh.update(run([k for k, v in vectors.items() if k not in fresh and not shape_fits(v.shape, shape)]))
        vectors.update(fresh)
        put_rows(cache, cache_id, list(fresh.items()), revision=revision)
        if shape != recorded:
            record_row_shape(cache, cache_id, shape)
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
    stated, revision = stated_facts(encoder)
    return _distinct_rows(encoder.id, texts, texts, encoder.encode, cache, stated=stated, revision=revision)


def embed_audio(encoder, waveforms: Sequence[np.ndarray], sampling_rate: int, *,
                cache: EmbeddingCache | None = None) -> np.ndarray:
    """CLAP audio embeddings of mono clips, each distinct clip through the audio tower once.

    Clips are keyed by :func:`musiceval.audio.audio_content_hash` (samples and rate), in
    ``cache`` under the id ``<encoder id>#audio``. ``ValueError`` names an empty or non-mono clip.
    """
    from musiceval.audio import audio_content_hash

    for k, w in enumerate(waveforms):
        if np.asarray(w).ndim != 1 or np.asarray(w).size == 0:
            raise ValueError(f"waveform {k} must be a non-empty mono 1-d array")
    hashes = [audio_content_hash(w, sampling_rate) for w in waveforms]
    stated, revision = stated_facts(encoder)  # CLAP's audio rows share the text rows' projection
    return _distinct_rows(f"{encoder.id}#audio", hashes, list(waveforms),
                          lambda clips: encoder.encode_audio(clips, sampling_rate), cache, stated=stated, revision=revision)


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
