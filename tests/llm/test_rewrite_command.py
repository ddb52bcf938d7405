"""``musiceval rewrite``: record every call in a cassette, replay it without a key or a server, and
feed the result to ``musiceval score freeform``. The "LLM" is the local fake server of
tests/llm/test_rewrite.py (deterministic string edits)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from musiceval.cli import main
from musiceval.conditions import load_rewrites
from musiceval.llm.fake_server import FakeOpenAIServer
from tests.llm.test_rewrite import SECRET, fake_llm

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl"


@pytest.fixture
def dataset(tmp_path) -> Path:
    """Five real MusicQA rows (dasheng layout), one of them with an empty reference."""
    rows = [json.loads(line) for line in FIXTURE.read_text("utf-8").splitlines()[:5]]
    rows[4]["answer"] = "   "
    path = tmp_path / "dev.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def run(capsys, *argv) -> tuple[int, dict | None, str]:
    code = main(["rewrite", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def test_record_then_replay_without_key_or_server_gives_the_same_file(dataset, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("CI", raising=False)
    out = tmp_path / "rewrites.jsonl"
    with FakeOpenAIServer(fake_llm) as server:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code, summary, err = run(capsys, dataset, "--model", "fake-model", "--out", out)
        n_requests = len(server.requests)
    assert code == 1 and "dev.jsonl:5" in err and "nothing to score against" in err  # listed, not a crash
    assert summary["n"] == 4 and summary["n_failed"] == 1 and summary["mode"] == "new_episodes"
    assert n_requests == 8 == summary["calls"]  # 4 references x (skyline, adversarial)
    cassette = Path(summary["cassette"])
    assert cassette == tmp_path / "rewrites.jsonl.cassette.yaml" and SECRET not in cassette.read_text()
    recorded = out.read_bytes()
    rewrites = load_rewrites(out)
    assert {r.source for r in rewrites.values()} == {"llm:fake-model:rewrite_v1"}

    monkeypatch.delenv("OPENAI_API_KEY")
    out.unlink()
    code, summary, _ = run(capsys, dataset, "--model", "fake-model", "--out", out, "--replay")
    assert code == 1 and summary["mode"] == "none" and summary["n"] == 4
    assert out.read_bytes() == recorded

    assert main(["score", "freeform", "--format", "dasheng", str(dataset), "--rewrites", str(out), "--metrics", "bleu,rouge_l",
                 "--conditions", "skyline,adversarial", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["metrics"] == {} and set(result["conditions"]) == {"skyline", "adversarial"} and result["rewrite_sources"] == ["llm:fake-model:rewrite_v1"]


def test_ci_never_records_and_a_request_missing_from_the_cassette_names_the_fix(dataset, tmp_path, monkeypatch, capsys):
    out = tmp_path / "rewrites.jsonl"
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    code, _, err = run(capsys, dataset, "--model", "fake-model", "--out", out)
    assert code == 2 and "cassette" in err and "missing" in err and not out.exists()

    cassette = tmp_path / "c.yaml"
    monkeypatch.delenv("CI")
    with FakeOpenAIServer(fake_llm) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert run(capsys, dataset, "--model", "fake-model", "--out", out, "--cassette", cassette, "--max-items", "1")[0] == 1
    code, _, err = run(capsys, dataset, "--model", "fake-model", "--out", out, "--cassette", cassette, "--replay")
    assert code == 2 and "does not hold" in err and "OPENAI_API_KEY" in err


def test_recording_without_a_key_names_the_variable(dataset, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = run(capsys, dataset, "--model", "m", "--out", tmp_path / "o.jsonl")
    assert code == 2 and "OPENAI_API_KEY is not set" in err


@pytest.mark.parametrize("content", [b"", b"\xff\xfe not utf-8\n", b"[1, 2]\n"])
def test_an_input_without_references_is_an_input_error(tmp_path, monkeypatch, capsys, content):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    code, _, err = run(capsys, path, "--model", "m", "--out", tmp_path / "o.jsonl", "--replay")
    assert code == 2 and "no item with a reference" in err


def test_a_reference_that_copies_the_question_is_counted_as_left_out(dataset, tmp_path, monkeypatch, capsys):
    rows = [json.loads(line) for line in dataset.read_text("utf-8").splitlines()]
    rows[3]["answer"] = rows[3]["question"]
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    monkeypatch.delenv("CI", raising=False)
    with FakeOpenAIServer(fake_llm) as server:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code, summary, err = run(capsys, dataset, "--model", "fake-model", "--out", tmp_path / "rw.jsonl")
    assert code == 1 and summary["n"] == 3 and summary["n_failed"] == 1  # the blank reference of row 5
    assert summary["excluded"]["reference_copies_question"]["n"] == 1
    assert "1 item(s) left out by reference_copies_question" in err
