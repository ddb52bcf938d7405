"""Rows forged in the embedding cache are never served (docs/hardening.md "Cached rows are the
encoder's own"). The reported case: the recorded row shape and every row of a MiniLM store edited to
768 dimensions through sqlite3 made ``score triplets`` give 0.5025 where a clean run gives 0.75525,
with no warning. Each row now records the cache format, the weights' revision and a digest, and is
checked against the dimension the encoder states from its weights' config (no model loads for it):
a row that does not match is refused, recomputed with one warning naming the cache file, and
overwritten.
"""
from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from musiceval.cli import main
from musiceval.encoders import EmbeddingCache, embed_distinct
from musiceval.encoders.embedding_cache import CacheRowsRefused

ARGS = ["score", "triplets", "--triplets", "genre", "--max-triplets", "60", "--encoder", "minilm", "--json", "--no-progress"]
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def _forge(cache: EmbeddingCache, dim: int, *, digest: bool) -> int:
    """Every row and the recorded shape of the store set to ``dim`` random dimensions (``digest``: the
    rows' digests computed again, as a forger who knows the format would)."""
    conn = sqlite3.connect(cache.path)
    rows = conn.execute("SELECT rowid, encoder, key, revision FROM vectors").fetchall()
    rng = np.random.default_rng(0)
    for rowid, enc, key, revision in rows:
        blob = rng.normal(size=dim).astype("<f4").tobytes()
        new = cache._digest(enc, key, str(dim), revision or "", blob) if digest else None
        conn.execute("UPDATE vectors SET shape = ?, data = ?, digest = COALESCE(?, digest) WHERE rowid = ?",
                     (str(dim), blob, new, rowid))
    conn.execute("UPDATE encoder_names SET shape = ?", (str(dim),))
    conn.commit()
    conn.close()
    return len(rows)


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> dict:
    import contextlib
    import io

    folder = tmp_path_factory.mktemp("cold")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*ARGS, "--cache-dir", str(folder)]) == 0
    return json.loads(out.getvalue())


@pytest.mark.parametrize("digest", [False, True], ids=["rows-edited", "digests-recomputed"])
def test_score_triplets_on_rows_forged_to_768_dimensions_equals_a_clean_run(tmp_path, capsys, clean, digest):
    assert main([*ARGS, "--cache-dir", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"] == clean["metrics"]
    cache = EmbeddingCache(tmp_path / "embeddings")
    n = _forge(cache, 768, digest=digest)
    why = "of shape 768, not the encoder's 384" if digest else "edited after they were written"
    with pytest.warns(CacheRowsRefused, match=rf"embedding cache {cache.path}: {n} cached row\(s\) under {MINILM} "
                                              rf"refused \({n} {why}\); recomputed"):
        assert main([*ARGS, "--cache-dir", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"] == clean["metrics"]
    assert EmbeddingCache(tmp_path / "embeddings").row_shape(MINILM) == (384,)  # overwritten by the encoder's own


def test_a_lazy_minilm_states_its_dimension_and_revision_without_loading():
    from musiceval.encoders import LazyEncoder, load_text_encoder

    lazy = LazyEncoder("minilm", id=MINILM)
    assert lazy.dim == 384 and lazy.revision and not lazy.loaded
    eager = load_text_encoder("minilm")
    assert (eager.dim, eager.revision) == (lazy.dim, lazy.revision)  # one revision: they share rows


class Encoder:
    def __init__(self, revision: str, dim: int = 8):
        self.id, self.revision, self.dim, self.n_encoded = "test:forged", revision, dim, 0

    def encode(self, texts):
        self.n_encoded += len(texts)
        return np.asarray([np.random.default_rng(list(t.encode())).normal(size=self.dim) for t in texts], np.float32)


TEXTS = ["a calm piano piece", "a loud rock song", "jazz with brass"]


def test_rows_written_under_other_weights_are_refused(tmp_path):
    cache = EmbeddingCache(tmp_path)
    embed_distinct(Encoder("r1"), TEXTS, cache=cache)
    again = Encoder("r1")
    embed_distinct(again, TEXTS, cache=cache)
    assert again.n_encoded == 0
    retrained = Encoder("r2")
    with pytest.warns(CacheRowsRefused, match="3 computed with other weights"):
        embed_distinct(retrained, TEXTS, cache=cache)
    assert retrained.n_encoded == 3


def test_rows_of_an_earlier_cache_format_are_recomputed_once(tmp_path):
    cache = EmbeddingCache(tmp_path)
    embed_distinct(Encoder("r1"), TEXTS, cache=cache)
    conn = sqlite3.connect(cache.path)
    conn.execute("UPDATE vectors SET format = NULL, digest = NULL")  # as a store written before rows recorded them
    conn.commit()
    conn.close()
    first = Encoder("r1")
    with pytest.warns(CacheRowsRefused, match="3 written by an earlier cache format"):
        embed_distinct(first, TEXTS, cache=EmbeddingCache(tmp_path))
    second = Encoder("r1")
    embed_distinct(second, TEXTS, cache=EmbeddingCache(tmp_path))
    assert (first.n_encoded, second.n_encoded) == (3, 0)


def test_bertscore_token_rows_forged_with_their_recorded_width_are_refused(tmp_path):
    from bert_score import BERTScorer

    from musiceval.encoders.bertscore_cache import TokenCachedBERTScorer
    from musiceval.encoders.sentence import bundled_minilm_path

    scorer = BERTScorer(model_type=bundled_minilm_path(), num_layers=6, lang="en")
    cands, refs = TEXTS[:2], TEXTS[1:]
    cache = EmbeddingCache(tmp_path)
    expected = TokenCachedBERTScorer(scorer, cache).score(cands, refs)
    conn = sqlite3.connect(cache.path)
    rng = np.random.default_rng(0)
    for rowid, enc, key, revision in conn.execute("SELECT rowid, encoder, key, revision FROM vectors").fetchall():
        blob = rng.normal(size=(4, 769)).astype("<f4").tobytes()
        conn.execute("UPDATE vectors SET shape = '4,769', data = ?, digest = ? WHERE rowid = ?",
                     (blob, cache._digest(enc, key, "4,769", revision or "", blob), rowid))
    conn.execute("UPDATE encoder_names SET shape = '-1,769'")
    conn.commit()
    conn.close()
    with pytest.warns(CacheRowsRefused, match="not the encoder's \\*,385"):
        got = TokenCachedBERTScorer(scorer, EmbeddingCache(tmp_path)).score(cands, refs)
    for g, w in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=2e-6, rtol=0)
