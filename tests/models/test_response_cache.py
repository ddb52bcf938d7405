"""Response cache: keys, append-only JSON lines, torn lines, processes sharing one file."""
from __future__ import annotations

import json
import multiprocessing as mp

import pytest

from musiceval.models.cache import ResponseCache, cache_key, redact_spec

BASE = dict(model="hf:/m", revision="r1", settings={"temperature": 0.0, "max_tokens": 8, "seed": 0},
            prompt="What key?", audio_hash="abc", condition="correct")


def record(key: str, text: str = "C major", **extra) -> dict:
    return {"key": key, "item_id": "i", "text": text, **extra}


@pytest.mark.parametrize("field,value", [("model", "hf:/other"), ("revision", "r2"), ("prompt", "Which key?"),
                                         ("audio_hash", "abd"), ("condition", "noise"),
                                         ("settings", {"temperature": 0.0, "max_tokens": 8, "seed": 1}),
                                         ("settings", {"temperature": 0.7, "max_tokens": 8, "seed": 0})])
def test_every_defining_field_changes_the_key(field, value):
    assert cache_key(**BASE) != cache_key(**{**BASE, field: value})
    assert cache_key(**BASE) == cache_key(**dict(BASE))


def test_put_get_and_reopen_round_trip(tmp_path):
    cache = ResponseCache(tmp_path)
    assert cache.put(record("k1")) is True
    assert cache.put(record("k1", "other")) is False  # first answer wins, no duplicate line
    assert cache.get("k1")["text"] == "C major"
    again = ResponseCache(tmp_path)
    assert len(again) == 1 and "k1" in again and again.get("k2") is None
    assert len((tmp_path / "responses.jsonl").read_text().splitlines()) == 1


def test_a_torn_last_line_is_ignored_reported_and_repaired_on_the_next_write(tmp_path):
    cache = ResponseCache(tmp_path)
    cache.put(record("k1"))
    with open(cache.path, "ab") as f:
        f.write(b'{"key": "k2", "text": "half wri')  # a writer killed mid-line
    with pytest.warns(UserWarning, match="torn last line"):
        resumed = ResponseCache(tmp_path)
    assert len(resumed) == 1 and resumed.torn and resumed.get("k2") is None
    resumed.put(record("k2", "D minor"))
    lines = cache.path.read_text().splitlines()
    assert [json.loads(line)["key"] for line in lines] == ["k1", "k2"]


def test_garbage_lines_in_the_middle_are_reported_not_fatal(tmp_path):
    path = tmp_path / "responses.jsonl"
    path.write_text('{"key": "a", "text": "x"}\nnot json\n[1,2]\n{"key": "b"}\n\xff\n{"key": "c", "text": "y"}\n', encoding="latin-1")
    with pytest.warns(UserWarning):
        cache = ResponseCache(tmp_path)
    assert {r["key"] for r in cache.records()} == {"a", "c"}
    assert len(cache.torn) == 4


def test_records_without_key_or_text_are_refused(tmp_path):
    with pytest.raises(ValueError, match="key"):
        ResponseCache(tmp_path).put({"key": "k"})


def test_credentials_in_a_spec_are_redacted_before_they_reach_the_file(tmp_path):
    spec = "openai-compatible:https://user:sk-SECRET@host/v1?api_key=sk-SECRET2&x=1#m"
    assert "SECRET" not in redact_spec(spec)
    cache = ResponseCache(tmp_path)
    cache.put(record(cache_key(**{**BASE, "model": spec}), model=spec))
    assert "SECRET" not in cache.path.read_text()


def _writer(directory: str, worker: int, n: int) -> None:
    cache = ResponseCache(directory)
    for i in range(n):
        # half the keys are shared by all workers: each must still be written once
        key = f"shared-{i}" if i % 2 else f"w{worker}-{i}"
        cache.put(record(key, f"from {worker}"))


def test_four_processes_share_one_cache_without_duplicates_or_torn_lines(tmp_path):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, 40)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    lines = (tmp_path / "responses.jsonl").read_text().splitlines()
    keys = [json.loads(line)["key"] for line in lines]  # every line parses
    assert len(keys) == len(set(keys)) == 4 * 20 + 20
