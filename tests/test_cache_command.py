"""``musiceval cache``: what the embedding cache holds per encoder, and ``--drop`` of an encoder's rows."""
from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from musiceval.cli import main
from musiceval.encoders.embedding_cache import EmbeddingCache

BERT = "bertscore:/models/minilm:layer6:raw#tokens"
MINILM = "meanpool:all-MiniLM-L6-v2"


def _fill(root):
    cache = EmbeddingCache(root / "embeddings")
    cache.put_many(BERT, [(f"text {i}", np.full((40, 385), 0.5, np.float32)) for i in range(30)])
    cache.put_many(MINILM, [(f"text {i}", np.ones(384, np.float32)) for i in range(10)])
    cache.close()
    return cache


def _json(capsys, *argv):
    assert main(["cache", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_listing_names_each_encoder_with_its_rows_and_bytes_largest_first(tmp_path, capsys):
    _fill(tmp_path)
    out = _json(capsys, "--cache-dir", str(tmp_path))
    assert [(e["encoder"], e["rows"], e["bytes"]) for e in out["encoders"]] == [(BERT, 30, 30 * 40 * 385 * 4), (MINILM, 10, 10 * 384 * 4)]
    assert out["exists"] and out["file_bytes"] >= 30 * 40 * 385 * 4 and out["dropped"] == []
    assert main(["cache", "--cache-dir", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "30 rows" in text and BERT in text and MINILM in text


def test_drop_removes_the_matching_encoders_only_and_the_file_shrinks(tmp_path, capsys):
    cache = _fill(tmp_path)
    before = cache.path.stat().st_size
    out = _json(capsys, "--cache-dir", str(tmp_path), "--drop", "bertscore:*")
    assert [e["encoder"] for e in out["dropped"]] == [BERT]
    assert [e["encoder"] for e in out["encoders"]] == [MINILM]
    assert cache.path.stat().st_size < before / 10  # VACUUM gave the space back
    again = EmbeddingCache(tmp_path / "embeddings")
    assert again.get(BERT, "text 0") is None  # dropped rows are recomputed by the next run
    np.testing.assert_array_equal(again.get(MINILM, "text 3"), np.ones(384, np.float32))
    again.put(BERT, "text 0", np.zeros((2, 385), np.float32))  # the encoder is named again when it writes again
    assert {e["encoder"] for e in again.contents()} == {BERT, MINILM}


def test_a_pattern_that_matches_nothing_is_an_error_naming_what_is_there(tmp_path, capsys):
    _fill(tmp_path)
    assert main(["cache", "--cache-dir", str(tmp_path), "--drop", "clap:*"]) == 2
    err = capsys.readouterr().err
    assert "no encoder id matches" in err and BERT in err and MINILM in err
    assert len(EmbeddingCache(tmp_path / "embeddings")) == 40  # nothing dropped


def test_rows_written_before_ids_were_recorded_are_listed_and_dropped_by_key(tmp_path, capsys):
    _fill(tmp_path)
    with sqlite3.connect(tmp_path / "embeddings" / EmbeddingCache.FILENAME) as conn:
        conn.execute("DELETE FROM encoder_names")  # as a cache written by an earlier musiceval
    out = _json(capsys, "--cache-dir", str(tmp_path))
    assert [e["encoder"] for e in out["encoders"]] == [None, None]
    key = out["encoders"][0]["key"]
    assert main(["cache", "--cache-dir", str(tmp_path)]) == 0
    assert f"key {key} (written before encoder ids were recorded)" in capsys.readouterr().out
    out = _json(capsys, "--cache-dir", str(tmp_path), "--drop", key)
    assert [e["rows"] for e in out["dropped"]] == [30] and [e["rows"] for e in out["encoders"]] == [10]


def test_no_cache_yet_is_said_and_nothing_is_created_and_drop_there_is_an_error(tmp_path, capsys):
    out = _json(capsys, "--cache-dir", str(tmp_path / "fresh"))
    assert not out["exists"] and out["encoders"] == [] and not (tmp_path / "fresh").exists()
    assert main(["cache", "--cache-dir", str(tmp_path / "fresh"), "--drop", "bertscore:*"]) == 2
    assert "no embedding cache there" in capsys.readouterr().err


def test_a_corrupt_cache_file_is_an_error_naming_the_file_not_a_traceback(tmp_path, capsys):
    folder = tmp_path / "embeddings"
    folder.mkdir()
    (folder / EmbeddingCache.FILENAME).write_bytes(b"not a database" * 100)
    with pytest.warns(UserWarning, match="unusable"):
        code = main(["cache", "--cache-dir", str(tmp_path)])
    assert code == 2
    assert "delete the file" in capsys.readouterr().err
