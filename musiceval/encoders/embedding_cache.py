"""The on-disk embedding cache: one SQLite file of float32 rows keyed by (encoder id, sha256 of the
text or clip key), shared by every encoder-based metric, every condition, xdist worker and run.

:class:`EmbeddingCache` is read before any model loads (a warm run loads none) and validates each
row on the way out; :meth:`EmbeddingCache.contents` and :meth:`EmbeddingCache.drop` are what
``musiceval cache`` lists and deletes.
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import warnings
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from musiceval.writes import DISK_FULL


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def shape_fits(shape: Sequence[int], expect: Sequence[int]) -> bool:
    """Whether a row of ``shape`` has the ``expect``-ed shape (``-1`` there: any length on that axis)."""
    return len(shape) == len(expect) and all(e == -1 or d == e for d, e in zip(shape, expect))


class CacheRowsRefused(UserWarning):
    """Cached rows that were not the encoder's own (another dimension, other weights, an earlier cache
    format, edited): refused, recomputed and overwritten. The message names the cache file."""


class EmbeddingCache:
    """On-disk embedding cache: one SQLite file (``<root>/embeddings.sqlite3``, WAL mode).

    One table holds every row, keyed by (encoder id, sha256 of the text or clip key): the
    float32 vector as a blob with its shape. A run that embeds 20,000 texts leaves one file (plus
    SQLite's ``-wal``/``-shm`` while open), not one ``.npy`` and one ``.lock`` per text.

    - Safe across processes (xdist workers, concurrent runs): SQLite's own locking, WAL mode so
      readers never block the writer, a busy timeout instead of errors, one transaction per batch
      (:meth:`put_many`); a second writer of the same key replaces an identical row.
    - Validated on read: a row whose blob does not match its shape, whose shape differs from the
      one asked for (the shape the encoder states, else the one its own rows have, :meth:`row_shape`),
      whose values are not all finite, that an earlier cache format wrote, that was written under
      other weights (``revision``) or edited after it was written (its digest binds the cache
      format, the encoder id, the revision, the key, the shape and the bytes) is refused: a miss,
      recomputed and overwritten, with one warning naming the file. Never served.
    - An unusable store (a corrupt or unwritable file, a read-only file system) degrades to no
      cache with one warning: values are computed, never wrong.
    """

    FILENAME = "embeddings.sqlite3"
    # a rowid table: its B-tree orders small (rowid, pointer) cells while the blobs go to overflow
    # pages. The earlier WITHOUT ROWID table ("embeddings") kept whole rows in the key's B-tree,
    # which SQLite advises against for large rows: 372 MB of BERTScore token rows took 2.3 s to
    # write and 0.8 s to read back, against 1.4 s and 0.3 s here. Its rows move over on first open.
    _SCHEMA = ("CREATE TABLE IF NOT EXISTS vectors (encoder TEXT NOT NULL, key TEXT NOT NULL, "
               "shape TEXT NOT NULL, data BLOB NOT NULL, format INTEGER, revision TEXT, digest TEXT, "
               "PRIMARY KEY (encoder, key))")
    #: the layout of a row (bumped when what a row means changes: rows of another format are refused)
    FORMAT = 2
    #: what each row records beside its vector (added to a store written before they were)
    _ROW_RECORD = (("format", "INTEGER"), ("revision", "TEXT"), ("digest", "TEXT"))
    # the encoder ids behind the hashes of ``vectors.encoder``, for :meth:`contents` and :meth:`drop`, and
    # the shape of the rows the encoder itself produced (:meth:`row_shape`; NULL until it wrote some)
    _NAMES = "CREATE TABLE IF NOT EXISTS encoder_names (encoder TEXT PRIMARY KEY, name TEXT NOT NULL, shape TEXT)"

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
            self._add_shape_column(conn)
            self._add_row_record(conn)
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

    @staticmethod
    def _add_shape_column(conn: sqlite3.Connection) -> None:
        """``encoder_names.shape`` added to a store written before row shapes were recorded (its
        encoders then have no recorded shape: :func:`musiceval.encoders.base.embed_distinct` checks
        one row against the encoder before using the others)."""
        columns = {row[1] for row in conn.execute("PRAGMA table_info(encoder_names)")}
        if "shape" not in columns:
            try:
                conn.execute("ALTER TABLE encoder_names ADD COLUMN shape TEXT")
            except sqlite3.OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc):
                    raise

    @classmethod
    def _add_row_record(cls, conn: sqlite3.Connection) -> None:
        """``vectors.format``, ``revision`` and ``digest`` added to a store written before rows
        recorded them (its rows then read as an earlier format: refused and recomputed once)."""
        columns = {row[1] for row in conn.execute("PRAGMA table_info(vectors)")}
        for name, kind in cls._ROW_RECORD:
            if name in columns:
                continue
            try:
                conn.execute(f"ALTER TABLE vectors ADD COLUMN {name} {kind}")
            except sqlite3.OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc):
                    raise

    @classmethod
    def _digest(cls, enc: str, key: str, shape_text: str, revision: str, blob: bytes) -> str:
        """What binds a row to its cache format, encoder, weights, key and shape."""
        head = f"{cls.FORMAT}\0{enc}\0{key}\0{shape_text}\0{revision}\0".encode("utf-8", "surrogatepass")
        return hashlib.sha256(head + bytes(blob)).hexdigest()[:32]

    def _disable(self, exc: BaseException) -> None:
        self._broken = f"{type(exc).__name__}: {exc}"
        full = "disk is full" in str(exc) or getattr(exc, "errno", None) in DISK_FULL
        fix = ("free space or pass --cache-dir DIR (pytest: --musiceval-cache-dir DIR) on a writable disk" if full
               else "delete the file or pass another cache directory")
        warnings.warn(f"embedding cache {self.path} unusable ({self._broken}); embeddings are computed "
                      f"without a cache: {fix}", stacklevel=3)

    @staticmethod
    def _enc(encoder_id: str) -> str:
        return hashlib.sha256(encoder_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def _decode(self, enc: str, key: str, row: tuple, expect: tuple[int, ...] | None,
                revision: str | None) -> tuple[np.ndarray | None, str | None]:
        """``(vector, None)``, or ``(None, why it is refused)``."""
        shape_text, blob, fmt, row_revision, digest = row
        if fmt != self.FORMAT:
            return None, "written by an earlier cache format"
        if not isinstance(shape_text, str) or not isinstance(blob, bytes) or \
                digest != self._digest(enc, key, shape_text, row_revision or "", blob):
            return None, "edited after they were written"
        if revision is not None and (row_revision or "") != revision:
            return None, "computed with other weights"
        try:
            shape = tuple(int(d) for d in shape_text.split(",") if d != "")
            if any(d < 0 for d in shape) or len(blob) != 4 * int(np.prod(shape, dtype=np.int64)):
                raise ValueError("size")
        except (ValueError, TypeError):
            return None, "torn"
        if expect is not None and not shape_fits(shape, expect):
            star = len(shape) == len(expect)  # token rows: any length (*), one width
            seen = ",".join("*" if star and e == -1 else str(d) for d, e in zip(shape, expect if star else shape))
            return None, f"of shape {seen}, not the encoder's {','.join('*' if d == -1 else str(d) for d in expect)}"
        v = np.frombuffer(blob, dtype="<f4").reshape(shape).astype(np.float32)
        if not np.isfinite(v).all():
            return None, "not finite"
        return v, None

    def _warn_refused(self, encoder_id: str, refused: dict[str, int]) -> None:
        from musiceval.redact import redact

        n = sum(refused.values())
        self.n_rejected += n
        why = "; ".join(f"{k} {reason}" for reason, k in sorted(refused.items(), key=lambda r: -r[1]))
        warnings.warn(f"embedding cache {self.path}: {n} cached row(s) under {redact(encoder_id)} refused ({why}); "
                      "recomputed with the encoder and overwritten", CacheRowsRefused, stacklevel=4)

    # -- public API -------------------------------------------------------------------------
    def get(self, encoder_id: str, text: str, *, shape: tuple[int, ...] | None = None) -> np.ndarray | None:
        """The cached vector, or None (absent, or present but invalid: then it is recomputed)."""
        return self.get_many(encoder_id, [text], shape=shape).get(text)

    def get_many(self, encoder_id: str, texts: Sequence[str], *, shape: tuple[int, ...] | None = None,
                 revision: str | None = None) -> dict[str, np.ndarray]:
        """``{text: vector}`` for the texts cached (and valid) under ``encoder_id``; with ``shape``,
        rows of another shape are misses (``-1`` in ``shape``: any length on that axis); with
        ``revision``, so are rows written under other weights. Refused rows give one warning
        (:class:`CacheRowsRefused`) naming the file and why."""
        conn = self._conn()
        if conn is None or not texts:
            return {}
        by_key = {text_key(t): t for t in texts}
        enc, out, keys = self._enc(encoder_id), {}, list(by_key)
        refused: dict[str, int] = {}
        try:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                rows = conn.execute(f"SELECT key, shape, data, format, revision, digest FROM vectors WHERE encoder = ? "
                                    f"AND key IN ({','.join('?' * len(chunk))})", [enc, *chunk]).fetchall()
                for key, *row in rows:
                    v, why = self._decode(enc, key, tuple(row), shape, revision)
                    if v is not None:
                        out[by_key[key]] = v
                    else:
                        refused[str(why)] = refused.get(str(why), 0) + 1
        except sqlite3.Error as exc:
            self._disable(exc)
            return {}
        if refused:
            self._warn_refused(encoder_id, refused)
        return out

    def put(self, encoder_id: str, text: str, vector: np.ndarray) -> None:
        self.put_many(encoder_id, [(text, vector)])

    def put_many(self, encoder_id: str, rows: Iterable[tuple[str, np.ndarray]], *, revision: str | None = None) -> None:
        """Store (text, vector) rows in one transaction, each with the cache format, the weights'
        ``revision`` and its digest; non-finite vectors are not stored."""
        conn = self._conn()
        if conn is None:
            return
        enc, values, revision = self._enc(encoder_id), [], revision or ""
        for text, vector in rows:
            v = np.ascontiguousarray(np.asarray(vector, dtype="<f4"))
            if not np.isfinite(v).all():
                continue
            key, shape_text, blob = text_key(text), ",".join(str(d) for d in v.shape), v.tobytes()
            values.append((enc, key, shape_text, blob, self.FORMAT, revision,
                           self._digest(enc, key, shape_text, revision, blob)))
        if not values:
            return
        try:
            with conn:  # one transaction; BEGIN IMMEDIATE waits (busy_timeout) for another writer
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR REPLACE INTO vectors (encoder, key, shape, data, format, revision, digest) "
                                 "VALUES (?, ?, ?, ?, ?, ?, ?)", values)
                if encoder_id not in self._named:
                    conn.execute("INSERT OR IGNORE INTO encoder_names (encoder, name) VALUES (?, ?)", (enc, encoder_id))
            self._named.add(encoder_id)
        except sqlite3.Error as exc:
            self._disable(exc)

    def row_shape(self, encoder_id: str) -> tuple[int, ...] | None:
        """The shape of the rows ``encoder_id`` produced, as recorded by :meth:`set_row_shape`
        (``-1``: any length on that axis), or None when none was recorded."""
        conn = self._conn()
        if conn is None:
            return None
        try:
            row = conn.execute("SELECT shape FROM encoder_names WHERE encoder = ?", (self._enc(encoder_id),)).fetchone()
        except sqlite3.Error as exc:
            self._disable(exc)
            return None
        try:
            return tuple(int(d) for d in row[0].split(",")) if row and row[0] else None
        except ValueError:  # an edited store: no usable record
            return None

    def set_row_shape(self, encoder_id: str, shape: Sequence[int]) -> None:
        """Record the shape of the rows ``encoder_id`` produces: from then on rows of another shape
        under that id are misses. Called with rows the encoder has just computed, never with rows read back."""
        conn = self._conn()
        if conn is None:
            return
        try:
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("INSERT INTO encoder_names (encoder, name, shape) VALUES (?, ?, ?) "
                             "ON CONFLICT(encoder) DO UPDATE SET shape = excluded.shape",
                             (self._enc(encoder_id), encoder_id, ",".join(str(int(d)) for d in shape)))
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
