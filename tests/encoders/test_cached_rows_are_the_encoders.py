"""A cached row is used only when it is the encoder's own (docs/hardening.md "Embedding
cache"): rows of the wrong dimension or of another encoder, planted in the store, are misses."""
from __future__ import annotations

import json

import numpy as np
import pytest

from musiceval.cli import main
from musiceval.encoders import EmbeddingCache, embed_distinct
from musiceval.encoders.base import row_signature

TEXTS = ["a calm piano piece", "a loud rock song", "jazz with brass", "techno beat"]


class Encoder:
    """Deterministic unit vectors of dimension ``dim`` seeded by the text (``salt``: another model)."""

    def __init__(self, dim: int = 8, salt: int = 0, id: str = "test:rows"):
        self.dim, self.salt, self.id, self.n_encoded = dim, salt, id, 0

    def encode(self, texts):
        self.n_encoded += len(texts)
        rows = [np.random.default_rng([self.salt, *t.encode()]).normal(size=self.dim) for t in texts]
        return np.asarray([r / np.linalg.norm(r) for r in rows], np.float32).reshape(len(texts), self.dim)


def _plant(cache: EmbeddingCache, encoder_id: str, rows) -> None:
    cache.put_many(encoder_id, list(zip(TEXTS, rows)))


def test_rows_of_the_wrong_dimension_in_a_store_the_encoder_never_wrote_are_recomputed(tmp_path):
    cache = EmbeddingCache(tmp_path)
    _plant(cache, "test:rows", Encoder(dim=3).encode(TEXTS))
    enc = Encoder()
    np.testing.assert_array_equal(embed_distinct(enc, TEXTS, cache=cache), Encoder().encode(TEXTS))
    assert cache.row_shape("test:rows") == (8,)
    again = Encoder()
    np.testing.assert_array_equal(embed_distinct(again, TEXTS, cache=cache), Encoder().encode(TEXTS))
    assert again.n_encoded == 0  # recomputed rows overwrote the planted ones


def test_rows_of_the_wrong_dimension_planted_after_the_encoder_wrote_are_misses(tmp_path):
    cache = EmbeddingCache(tmp_path)
    embed_distinct(Encoder(), TEXTS, cache=cache)
    _plant(cache, "test:rows", Encoder(dim=3).encode(TEXTS))
    enc = Encoder()
    np.testing.assert_array_equal(embed_distinct(enc, TEXTS, cache=cache), Encoder().encode(TEXTS))
    assert enc.n_encoded == len(TEXTS) and cache.n_rejected == len(TEXTS)


def test_rows_of_another_encoder_with_the_same_dimension_are_recomputed(tmp_path):
    cache = EmbeddingCache(tmp_path)
    _plant(cache, "test:rows", Encoder(salt=1).encode(TEXTS))
    enc = Encoder()
    np.testing.assert_array_equal(embed_distinct(enc, TEXTS, cache=cache), Encoder().encode(TEXTS))
    assert enc.n_encoded == len(TEXTS)  # one row checked (and kept), then the three others recomputed


def test_the_encoders_own_rows_in_an_unrecorded_store_cost_one_check(tmp_path):
    cache = EmbeddingCache(tmp_path)
    _plant(cache, "test:rows", Encoder().encode(TEXTS))
    enc = Encoder()
    embed_distinct(enc, TEXTS, cache=cache)
    assert enc.n_encoded == 1 and cache.row_shape("test:rows") == (8,)


def test_an_encoder_whose_dimension_changed_under_the_same_id_recomputes_the_old_rows(tmp_path):
    cache = EmbeddingCache(tmp_path)
    embed_distinct(Encoder(dim=8), TEXTS[:2], cache=cache)
    wider = Encoder(dim=16)
    rows = embed_distinct(wider, TEXTS, cache=cache)  # two missing texts reveal the new width
    assert rows.shape == (4, 16) and wider.n_encoded == 4 and cache.row_shape("test:rows") == (16,)


def test_token_rows_record_any_length_of_a_fixed_width():
    assert row_signature(np.zeros((7, 385))) == (-1, 385) and row_signature(np.zeros(384)) == (384,)


def test_score_triplets_with_planted_rows_equals_a_cold_run(tmp_path, capsys):
    """The reported symptom: `score triplets` read 384-d MiniLM rows planted at another dimension."""
    args = ["score", "triplets", "--triplets", "genre", "--max-triplets", "60", "--encoder", "minilm", "--json",
            "--no-progress"]
    assert main([*args, "--cache-dir", str(tmp_path / "warm")]) == 0  # a cold run fills the store
    cold = json.loads(capsys.readouterr().out)
    cache = EmbeddingCache(tmp_path / "warm" / "embeddings")
    (entry,) = cache.contents()
    import sqlite3

    conn = sqlite3.connect(cache.path)  # every row replaced by a 16-d random row, as a foreign store would hold
    rows = conn.execute("SELECT rowid FROM vectors").fetchall()
    rng = np.random.default_rng(0)
    conn.executemany("UPDATE vectors SET shape = '16', data = ? WHERE rowid = ?",
                     [(rng.normal(size=16).astype("<f4").tobytes(), r) for (r,) in rows])
    conn.commit()
    conn.close()
    assert main([*args, "--cache-dir", str(tmp_path / "warm")]) == 0
    planted = json.loads(capsys.readouterr().out)
    assert planted["metrics"] == cold["metrics"]
    assert entry["encoder"] == "sentence-transformers/all-MiniLM-L6-v2"


@pytest.mark.parametrize("width", [3, 385])
def test_bertscore_token_rows_of_another_width_are_recomputed(tmp_path, width):
    from bert_score import BERTScorer

    from musiceval.encoders.bertscore_cache import TokenCachedBERTScorer
    from musiceval.encoders.sentence import bundled_minilm_path

    scorer = BERTScorer(model_type=bundled_minilm_path(), num_layers=6, lang="en")
    cands, refs = TEXTS[:2], TEXTS[2:]
    expected = TokenCachedBERTScorer(scorer, EmbeddingCache(tmp_path / "cold")).score(cands, refs)
    cache = EmbeddingCache(tmp_path / "planted")
    cached = TokenCachedBERTScorer(scorer, cache)
    rng = np.random.default_rng(0)
    cache.put_many(cached.id, [(t, rng.normal(size=(5, width)).astype(np.float32)) for t in TEXTS])
    got = cached.score(cands, refs)
    for g, w in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=2e-6, rtol=0)
    assert cache.row_shape(cached.id) == (-1, 385)
