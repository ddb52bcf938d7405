"""The text-encoder protocol, the registry of encoder names and the distinct-text embedding path.

Conventions
-----------
- ``encode(texts)`` returns a float32 array of shape ``(len(texts), dim)`` whose rows are
  L2-normalised, so cosine similarity is a dot product.
- :func:`embed_distinct` embeds each distinct string once per call (references are shared by all
  five conditions; prompts are shared by thousands of triplets) and maps rows back.
- :class:`EmbeddingCache` keeps embeddings on disk keyed by (encoder id, sha256 of the text) in one
  SQLite file (WAL mode), so a rerun, or another xdist worker, never embeds a string twice; rows
  are validated (shape, finiteness) on read.
- :class:`LazyEncoder` wraps an encoder spec and loads the model on its first ``encode``: with a
  warm cache, scoring never loads a model.
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, Sequence, runtime_checkable

import numpy as np


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
    """On-disk embedding cache: one SQLite file (``<root>/embeddings.sqlite3``, WAL mode).

    One table holds every row, keyed by (encoder id, sha256 of the text or clip key): the
    float32 vector as a blob with its shape. A run that embeds 20,000 texts leaves one file (plus
    SQLite's ``-wal``/``-shm`` while open), not one ``.npy`` and one ``.lock`` per text.

    - Safe across processes (xdist workers, concurrent runs): SQLite's own locking, WAL mode so
      readers never block the writer, a busy timeout instead of errors, one transaction per batch
      (:meth:`put_many`); a second writer of the same key replaces an identical row.
    - Validated on read: a row whose blob does not match its shape, whose shape differs from the
      one asked for, or whose values are not all finite is a miss (recomputed and overwritten),
      never used.
    - An unusable store (a corrupt or unwritable file, a read-only file system) degrades to no
      cache with one warning: values are computed, never wrong.
    """

    FILENAME = "embeddings.sqlite3"
    # a rowid table: its B-tree orders small (rowid, pointer) cells while the blobs go to overflow
    # pages. The earlier WITHOUT ROWID table ("embeddings") kept whole rows in the key's B-tree,
    # which SQLite advises against for large rows: 372 MB of BERTScore token rows took 2.3 s to
    # write and 0.8 s to read back, against 1.4 s and 0.3 s here. Its rows move over on first open.
    _SCHEMA = ("CREATE TABLE IF NOT EXISTS vectors (encoder TEXT NOT NULL, key TEXT NOT NULL, "
               "shape TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (encoder, key))")
    # the encoder ids behind the hashes of ``vectors.encoder``, for :meth:`contents` and :meth:`drop`
    _NAMES = "CREATE TABLE IF NOT EXISTS encoder_names (encoder TEXT PRIMARY KEY, name TEXT NOT NULL)"

    def __init__(self, root: str | os.PathLike[str], *, timeout: float = 60.0):
        self.root = Path(root)
        self.path = self.root / self.FILENAME
        self.timeout = float(timeout)
        self._local = threading.local()
        self._broken: str | None = None
        #: rows read back but rejected (bad shape, torn blob, non-finite values), then recomputed
        self.n_rejected = 0
        self._named: set[str] = set()  # encoder ids whose name row this process has written

    # -- connection (one per process and thread) ---------------------------------------------
    def _conn(self) -> sqlite3.Connection | None:
        if self._broken is not None:
            return None
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=self.timeout, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(self._SCHEMA)
            conn.execute(self._NAMES)
            self._migrate(conn)
        except (sqlite3.Error, OSError) as exc:
            self._disable(exc)
            return None
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        """Rows of the earlier ``embeddings`` table (WITHOUT ROWID) copied into ``vectors``, then
        that table dropped: once, in one transaction (a second process finds it gone)."""
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'embeddings'").fetchone():
            return
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'embeddings'").fetchone():
                conn.execute("INSERT OR IGNORE INTO vectors (encoder, key, shape, data) "
                             "SELECT encoder, key, shape, data FROM embeddings")
                conn.execute("DROP TABLE embeddings")

    def _disable(self, exc: BaseException) -> None:
        self._broken = f"{type(exc).__name__}: {exc}"
        warnings.warn(f"embedding cache {self.path} unusable ({self._broken}); embeddings are computed "
                      "without a cache. Delete the file or pass another cache directory.", stacklevel=3)

    @staticmethod
    def _enc(encoder_id: str) -> str:
        return hashlib.sha256(encoder_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def _decode(self, shape_text: str, blob: bytes, expect: tuple[int, ...] | None) -> np.ndarray | None:
        try:
            shape = tuple(int(d) for d in shape_text.split(",") if d != "")
            if any(d < 0 for d in shape) or (expect is not None and shape != tuple(expect)):
                raise ValueError("shape")
            if len(blob) != 4 * int(np.prod(shape, dtype=np.int64)):
                raise ValueError("size")
            v = np.frombuffer(blob, dtype="<f4").reshape(shape).astype(np.float32)
            if not np.isfinite(v).all():
                raise ValueError("non-finite")
        except (ValueError, TypeError):
            self.n_rejected += 1
            return None
        return v

    # -- public API -------------------------------------------------------------------------
    def get(self, encoder_id: str, text: str, *, shape: tuple[int, ...] | None = None) -> np.ndarray | None:
        """The cached vector, or None (absent, or present but invalid: then it is recomputed)."""
        return self.get_many(encoder_id, [text], shape=shape).get(text)

    def get_many(self, encoder_id: str, texts: Sequence[str], *,
                 shape: tuple[int, ...] | None = None) -> dict[str, np.ndarray]:
        """``{text: vector}`` for the texts cached (and valid) under ``encoder_id``."""
        conn = self._conn()
        if conn is None or not texts:
            return {}
        by_key = {text_key(t): t for t in texts}
        enc, out, keys = self._enc(encoder_id), {}, list(by_key)
        try:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                rows = conn.execute(f"SELECT key, shape, data FROM vectors WHERE encoder = ? AND key IN "
                                    f"({','.join('?' * len(chunk))})", [enc, *chunk]).fetchall()
                for key, shape_text, blob in rows:
                    v = self._decode(shape_text, blob, shape)
                    if v is not None:
                        out[by_key[key]] = v
        except sqlite3.Error as exc:
            self._disable(exc)
            return {}
        return out

    def put(self, encoder_id: str, text: str, vector: np.ndarray) -> None:
        self.put_many(encoder_id, [(text, vector)])

    def put_many(self, encoder_id: str, rows: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store (text, vector) rows in one transaction; non-finite vectors are not stored."""
        conn = self._conn()
        if conn is None:
            return
        enc, values = self._enc(encoder_id), []
        for text, vector in rows:
            v = np.ascontiguousarray(np.asarray(vector, dtype="<f4"))
            if not np.isfinite(v).all():
                continue
            values.append((enc, text_key(text), ",".join(str(d) for d in v.shape), v.tobytes()))
        if not values:
            return
        try:
            with conn:  # one transaction; BEGIN IMMEDIATE waits (busy_timeout) for another writer
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR REPLACE INTO vectors (encoder, key, shape, data) VALUES (?, ?, ?, ?)", values)
                if encoder_id not in self._named:
                    conn.execute("INSERT OR IGNORE INTO encoder_names (encoder, name) VALUES (?, ?)", (enc, encoder_id))
            self._named.add(encoder_id)
        except sqlite3.Error as exc:
            self._disable(exc)

    def contents(self) -> list[dict[str, Any]]:
        """What the cache holds, largest first: one ``{"encoder", "key", "rows", "bytes"}`` per encoder
        (``encoder``: its id, None for rows written before the ids were recorded; ``key``: the id's
        hash as stored; ``bytes``: the vectors' size). Raises OSError when the file is unusable."""
        try:
            rows = self._admin_conn().execute(
                "SELECT v.encoder, n.name, COUNT(*), SUM(LENGTH(v.data)) FROM vectors v "
                "LEFT JOIN encoder_names n ON n.encoder = v.encoder GROUP BY v.encoder").fetchall()
        except sqlite3.Error as exc:
            raise OSError(f"embedding cache {self.path} could not be read ({exc}); delete the file to start an empty cache") from exc
        return sorted(({"encoder": name, "key": key, "rows": int(n), "bytes": int(size or 0)} for key, name, n, size in rows),
                      key=lambda e: (-e["bytes"], e["encoder"] or "", e["key"]))

    def drop(self, patterns: Sequence[str]) -> list[dict[str, Any]]:
        """Delete the rows of every encoder whose id matches one of the shell patterns (``fnmatch``:
        ``bertscore:*``) or whose key equals one, then give the space back to the file system
        (``VACUUM``). Returns the :meth:`contents` entries removed."""
        import fnmatch

        gone = [e for e in self.contents() if any(p == e["key"] or (e["encoder"] is not None and fnmatch.fnmatchcase(e["encoder"], p))
                                                   for p in patterns)]
        conn = self._admin_conn()
        try:
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                for e in gone:
                    conn.execute("DELETE FROM vectors WHERE encoder = ?", (e["key"],))
                    conn.execute("DELETE FROM encoder_names WHERE encoder = ?", (e["key"],))
            self._named.clear()
            if gone:
                conn.execute("VACUUM")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:  # locked by a running evaluation past the busy timeout, or corrupt
            raise OSError(f"embedding cache {self.path}: the rows could not be dropped and the file compacted ({exc}); "
                          "run again when no musiceval run is using the cache") from exc
        return gone

    def _admin_conn(self) -> sqlite3.Connection:
        conn = self._conn()
        if conn is None:
            raise OSError(f"embedding cache {self.path} unusable ({self._broken}); delete the file to start an empty cache")
        return conn

    def __len__(self) -> int:
        conn = self._conn()
        return 0 if conn is None else int(conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            conn.close()
        self._local = threading.local()


def _lookup(cache, cache_id: str, keys: list[str]) -> dict[str, np.ndarray]:
    if cache is None or not keys:
        return {}
    if hasattr(cache, "get_many"):
        return cache.get_many(cache_id, keys)
    hits = {k: cache.get(cache_id, k) for k in keys}
    return {k: v for k, v in hits.items() if v is not None}


def _store(cache, cache_id: str, rows: list[tuple[str, np.ndarray]]) -> None:
    if cache is None or not rows:
        return
    if hasattr(cache, "put_many"):
        cache.put_many(cache_id, rows)
    else:
        for key, v in rows:
            cache.put(cache_id, key, v)


def _distinct_rows(cache_id: str, keys: Sequence[str], payloads: Sequence, encode: Callable[[list], object],
                   cache: EmbeddingCache | None) -> np.ndarray:
    """One row per key, in order: each distinct key read from ``cache`` under ``cache_id`` or,
    when absent, encoded once (with the others missing) from its payload and stored.

    ``encode`` runs only when some key is missing, so a lazily loaded encoder
    (:class:`LazyEncoder`) loads its model only on a cache miss. Cached rows whose shape differs
    from the freshly encoded rows (or from the other cached rows) are recomputed, never mixed.
    """
    payload_of: dict[str, object] = {}
    for key, payload in zip(keys, payloads):
        payload_of.setdefault(key, payload)
    vectors = _lookup(cache, cache_id, list(payload_of))
    missing = [k for k in payload_of if k not in vectors]
    shape = None
    if missing:
        new = np.asarray(encode([payload_of[k] for k in missing]), dtype=np.float32)
        shape = new.shape[1:]
        vectors.update(zip(missing, new))
        _store(cache, cache_id, [(k, vectors[k]) for k in missing])
    elif vectors:
        shapes = [v.shape for v in vectors.values()]
        shape = max(set(shapes), key=shapes.count)
    odd = [k for k, v in vectors.items() if v.shape != shape]
    if odd:  # a row cached with another shape (an edited or foreign store): recompute it
        fixed = np.asarray(encode([payload_of[k] for k in odd]), dtype=np.float32)
        vectors.update(zip(odd, fixed))
        _store(cache, cache_id, [(k, vectors[k]) for k in odd])
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


def length_batches(lengths: Sequence[int], *, max_texts: int, max_tokens: int) -> list[list[int]]:
    """Indices of texts in batches for a padded forward pass: longest first, each batch at most
    ``max_texts`` texts and ``max_tokens`` padded tokens (its longest text times its size; a text
    longer than ``max_tokens`` goes alone).

    Texts of similar lengths share a batch, so little padding goes through the model, and the
    budget keeps a batch's activations small: below glibc's mmap threshold (32 MB), freed
    activations are reused instead of mapped and faulted in again at every batch (MiniLM over
    the LTU captions: 1.1 M page faults at 8,192 tokens a batch, 0.4 M at 4,096).
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches, start = [], 0
    while start < len(order):
        size = max(1, min(max_texts, max_tokens // max(1, lengths[order[start]])))
        batches.append(order[start:start + size])
        start += size
    return batches
