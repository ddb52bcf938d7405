"""EmbeddingCache: one SQLite file, safe across processes, rows validated on read."""
from __future__ import annotations

import multiprocessing as mp
import sqlite3
import warnings

import numpy as np
import pytest

from musiceval.encoders import EmbeddingCache, LazyEncoder, embed_by_length, embed_distinct


class CountingEncoder:
    """Deterministic 8-d unit vectors from the text's bytes; counts what it encodes."""

    id = "test:counting"

    def __init__(self):
        self.n_encoded = 0

    def encode(self, texts):
        self.n_encoded += len(texts)
        rows = []
        for t in texts:
            rng = np.random.default_rng(int.from_bytes(t.encode("utf-8", "surrogatepass")[:8].ljust(8, b"\0"), "little"))
            v = rng.normal(size=8).astype(np.float32)
            rows.append(v / np.linalg.norm(v))
        return np.stack(rows) if rows else np.zeros((0, 8), np.float32)


def _files(root):
    return sorted(p.name for p in root.rglob("*") if p.is_file())


def test_2500_texts_leave_a_constant_number_of_files_and_a_rerun_encodes_nothing(tmp_path):
    texts = [f"text number {k}" for k in range(2500)]
    enc, cache = CountingEncoder(), EmbeddingCache(tmp_path)
    rows = embed_by_length(enc, texts, cache=cache)
    assert enc.n_encoded == 2500 and rows.shape == (2500, 8) and len(cache) == 2500
    assert len(_files(tmp_path)) <= 3  # embeddings.sqlite3 (+ -wal, -shm while open)
    cache.close()
    assert {"embeddings.sqlite3"} <= set(_files(tmp_path)) and not any(n.endswith((".npy", ".lock")) for n in _files(tmp_path))
    again, enc2 = EmbeddingCache(tmp_path), CountingEncoder()
    np.testing.assert_array_equal(embed_distinct(enc2, texts, cache=again), embed_distinct(CountingEncoder(), texts))
    assert enc2.n_encoded == 0


def _writer(root, offset, n, queue):
    try:
        enc, cache = CountingEncoder(), EmbeddingCache(root)
        for start in range(0, n, 25):  # many small transactions, interleaved with the other process
            embed_distinct(enc, [f"shared {k}" for k in range(offset + start, offset + start + 25)], cache=cache)
        queue.put(("ok", enc.n_encoded))
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        queue.put(("error", repr(exc)))


def test_two_processes_write_concurrently_without_errors_or_lost_rows(tmp_path):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), off, 400, queue)) for off in (0, 200)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert [r[0] for r in results] == ["ok", "ok"], results
    cache = EmbeddingCache(tmp_path)
    assert len(cache) == 600  # keys 0..599, 200..399 written by both
    texts = [f"shared {k}" for k in range(600)]
    enc = CountingEncoder()
    np.testing.assert_array_equal(embed_distinct(enc, texts, cache=cache), CountingEncoder().encode(texts))
    assert enc.n_encoded == 0


@pytest.mark.parametrize("corrupt", ["nan", "inf", "short_blob", "wrong_shape", "bad_shape_text"])
def test_a_corrupt_row_is_recomputed_and_replaced_not_used(tmp_path, corrupt):
    enc, cache = CountingEncoder(), EmbeddingCache(tmp_path)
    texts = ["alpha", "beta", "gamma"]
    good = embed_distinct(enc, texts, cache=cache)
    conn = sqlite3.connect(tmp_path / EmbeddingCache.FILENAME)
    (key,) = [k for (k,) in conn.execute("SELECT key FROM vectors")][:1]
    bad = {"nan": ("8", np.full(8, np.nan, "<f4").tobytes()), "inf": ("8", np.full(8, np.inf, "<f4").tobytes()),
           "short_blob": ("8", b"\0" * 12), "wrong_shape": ("4", np.ones(4, "<f4").tobytes()),
           "bad_shape_text": ("x,y", b"")}[corrupt]
    conn.execute("UPDATE vectors SET shape = ?, data = ? WHERE key = ?", (*bad, key))
    conn.commit()
    conn.close()
    enc2 = CountingEncoder()
    again = embed_distinct(enc2, texts, cache=EmbeddingCache(tmp_path))
    np.testing.assert_array_equal(again, good)
    assert enc2.n_encoded == 1  # only the corrupt row
    enc3 = CountingEncoder()
    embed_distinct(enc3, texts, cache=EmbeddingCache(tmp_path))
    assert enc3.n_encoded == 0  # and it was replaced by a valid row


def test_non_finite_vectors_are_never_stored_and_a_corrupt_file_degrades_to_no_cache(tmp_path):
    cache = EmbeddingCache(tmp_path)
    cache.put("e", "t", np.array([np.nan, 1.0], np.float32))
    assert cache.get("e", "t") is None and len(cache) == 0
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / EmbeddingCache.FILENAME).write_bytes(b"this is not a database" * 100)
    enc = CountingEncoder()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        rows = embed_distinct(enc, ["a", "b"], cache=EmbeddingCache(broken))
    assert rows.shape == (2, 8) and enc.n_encoded == 2
    assert any("unusable" in str(w.message) for w in seen)


def test_lone_surrogates_and_odd_text_are_keyed_without_error(tmp_path):
    texts = ["\ud800 lone", "zero\u200bwidth", "\u202eRTL", "", "emoji \U0001F3B5"]
    enc = CountingEncoder()
    rows = embed_distinct(enc, texts, cache=EmbeddingCache(tmp_path))
    assert rows.shape == (5, 8)


def test_lazy_encoder_loads_its_model_only_on_a_cache_miss(tmp_path):
    loads = []

    def loader(spec):
        loads.append(spec)
        return CountingEncoder()

    texts = ["one", "two", "one"]
    first = LazyEncoder("counting", loader=loader)
    rows = embed_distinct(first, texts, cache=EmbeddingCache(tmp_path))
    assert loads == ["counting"] and first.loaded and first.id == "lazy:counting"
    warm = LazyEncoder("counting", loader=loader)
    np.testing.assert_array_equal(embed_distinct(warm, texts, cache=EmbeddingCache(tmp_path)), rows)
    assert loads == ["counting"] and not warm.loaded
    embed_distinct(warm, ["three"], cache=EmbeddingCache(tmp_path))
    assert loads == ["counting", "counting"] and warm.loaded


def test_a_cache_written_in_the_earlier_without_rowid_table_is_moved_over_and_recomputed_once(tmp_path):
    texts = ["alpha", "beta", "gamma"]
    want = CountingEncoder().encode(texts)
    conn = sqlite3.connect(tmp_path / EmbeddingCache.FILENAME)
    conn.execute("CREATE TABLE embeddings (encoder TEXT NOT NULL, key TEXT NOT NULL, shape TEXT NOT NULL, "
                 "data BLOB NOT NULL, PRIMARY KEY (encoder, key)) WITHOUT ROWID")
    enc_id = EmbeddingCache._enc(CountingEncoder.id)
    from musiceval.encoders.embedding_cache import text_key

    conn.executemany("INSERT INTO embeddings VALUES (?, ?, ?, ?)",
                     [(enc_id, text_key(t), "8", row.astype("<f4").tobytes()) for t, row in zip(texts, want)])
    conn.commit()
    conn.close()
    enc = CountingEncoder()
    from musiceval.encoders.embedding_cache import CacheRowsRefused

    with pytest.warns(CacheRowsRefused, match="3 written by an earlier cache format"):
        np.testing.assert_array_equal(embed_distinct(enc, texts, cache=EmbeddingCache(tmp_path)), want)
    assert enc.n_encoded == 3  # its rows record no format, weights or digest: refused, recomputed once
    np.testing.assert_array_equal(embed_distinct(enc, texts, cache=EmbeddingCache(tmp_path)), want)
    assert enc.n_encoded == 3  # warm from then on
    conn = sqlite3.connect(tmp_path / EmbeddingCache.FILENAME)
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert tables == {"vectors", "encoder_names"}  # the old table is dropped once its rows moved
    assert len(EmbeddingCache(tmp_path)) == 3
