"""musiceval generate --shard i/n on a local OpenAI-compatible server, then musiceval merge."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from musiceval.cli import main as cli_main
from musiceval.generate import load_manifest, parse_shard, shard_of
from musiceval.models.cache import ResponseCache
from musiceval.models.merge import merge_caches

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "musiceval" / "evals" / "audio" / "manifest.jsonl"


def test_shards_split_by_id_hash_independent_of_file_order():
    ids = [f"item-{k}" for k in range(200)]
    shards = [shard_of(i, 4) for i in ids]
    assert shards == [shard_of(i, 4) for i in reversed(ids)][::-1] and set(shards) == {0, 1, 2, 3}
    assert all(25 <= shards.count(s) <= 75 for s in range(4))  # a hash, not a block of the file
    assert parse_shard("3/4") == (3, 4)
    for bad in ("4/4", "1", "-1/2", "a/b", "0/0"):
        with pytest.raises(ValueError, match="must be i/n with 0 <= i < n"):
            parse_shard(bad)


def _generate(server, root: Path, *extra: str, capsys) -> dict:
    """``musiceval generate --cache-dir ROOT``: the responses land in ROOT/responses."""
    code = cli_main(["generate", "--model", f"openai-compatible:{server.base_url}#echo", "--dataset", str(MANIFEST),
                     "--conditions", "correct,random,noise,text_only", "--cache-dir", str(root), "--no-progress",
                     "--concurrency", "4", *extra])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0, summary
    return summary


def _records(cache: Path) -> dict[str, str]:
    lines = (cache / "responses.jsonl").read_text().splitlines()
    records = {json.loads(line)["key"]: json.loads(line)["text"] for line in lines}
    assert len(records) == len(lines)  # no key twice
    return records


def test_sharded_generation_then_merge_equals_an_unsharded_run(tmp_path, capsys):
    pytest.importorskip("openai")
    from musiceval.llm.fake_server import FakeOpenAIServer

    items, _ = load_manifest(MANIFEST)
    with FakeOpenAIServer() as server:
        whole = _generate(server, tmp_path / "whole", capsys=capsys)
        parts = [_generate(server, tmp_path / f"s{i}", "--shard", f"{i}/3", capsys=capsys) for i in range(3)]
    assert [p["shard"] for p in parts] == ["0/3", "1/3", "2/3"] and whole["requests_per_s"] > 0
    assert sum(p["n_items_in_shard"] for p in parts) == len(items) == whole["n_items"]
    assert sum(p["n_responses"] for p in parts) == whole["n_responses"] > len(items)
    assert all(0 < p["n_responses"] < whole["n_responses"] for p in parts)

    assert cli_main(["merge", *(str(tmp_path / f"s{i}" / "responses") for i in range(3)), "--out", str(tmp_path / "merged")]) == 0
    report = json.loads(capsys.readouterr().out)
    whole_records = _records(tmp_path / "whole" / "responses")  # identical requests (text_only, same question) share a key
    assert report["n_written"] == len(whole_records) and report["n_conflicts"] == 0
    assert _records(tmp_path / "merged") == whole_records

    again = merge_caches([tmp_path / "s0" / "responses", tmp_path / "whole" / "responses"], tmp_path / "merged")  # idempotent
    assert again.n_written == 0 and not again.conflicts
    assert again.n_duplicates == len(_records(tmp_path / "s0" / "responses")) + len(whole_records)


def test_conflicting_answers_for_one_key_are_reported_and_the_first_kept(tmp_path, capsys):
    base = {"item_id": "q1", "condition": "correct", "chunk": 0, "model": "m", "revision": "r", "settings": {},
            "prompt": "p", "audio_hash": "a", "meta": {}}
    ResponseCache(tmp_path / "a").put_many([{**base, "key": "k1", "text": "jazz"}, {**base, "key": "k2", "text": "x"}])
    ResponseCache(tmp_path / "b").put_many([{**base, "key": "k1", "text": "blues"}, {**base, "key": "k2", "text": "x"}])
    assert cli_main(["merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "m")]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["n_conflicts"] == 1 and json.loads(captured.out)["n_duplicates"] == 1
    assert "CONFLICT q1" in captured.err and "'jazz'" in captured.err and "'blues'" in captured.err
    assert _records(tmp_path / "m") == {"k1": "jazz", "k2": "x"}
    assert cli_main(["merge", str(tmp_path / "absent"), "--out", str(tmp_path / "m2")]) == 2
    assert "no responses.jsonl" in capsys.readouterr().err


def test_generate_model_args_reach_the_server_and_the_cache_key(tmp_path, capsys):
    pytest.importorskip("openai")
    from musiceval.llm.fake_server import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        _generate(server, tmp_path / "c", "--limit", "2", "--model-args", "max_new_tokens=7,do_sample=false,seed=3",
                  capsys=capsys)
        assert {(b["max_tokens"], b["seed"], b["temperature"]) for b in server.bodies} == {(7, 3, 0.0)}
    settings = {json.dumps(json.loads(line)["settings"], sort_keys=True)
                for line in (tmp_path / "c" / "responses" / "responses.jsonl").read_text().splitlines()}
    assert settings == {json.dumps({"do_sample": False, "max_tokens": 7, "seed": 3, "temperature": 0.0}, sort_keys=True)}
    code = cli_main(["generate", "--model", "recorded:x", "--dataset", str(MANIFEST), "--model-args", "flash=1"])
    assert code == 2 and "unknown model argument 'flash'" in capsys.readouterr().err
