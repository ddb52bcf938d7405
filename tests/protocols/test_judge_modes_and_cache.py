"""The judge's modes read from one table (``JUDGING``: a new mode is one entry), and ``musiceval
score judge --cache-dir`` (docs/judge.md): a rescoring asks the judge nothing, whatever the
cassettes hold."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from musiceval import cli
from musiceval.llm.fake_server import FakeOpenAIServer
from musiceval.protocols import PROTOCOLS
from musiceval.protocols.judge import engine
from musiceval.protocols.judge.engine import JUDGING, Judge, JudgeError, JudgeSettings, mode_help, modes_with
from tests.judge_server import fair

ROOT = Path(__file__).resolve().parents[2]
FREEFORM = ROOT / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl"
SNAPSHOT = "judge-2024-08-06"


def _protocol(mode: str, tmp_path):
    judge = Judge(JudgeSettings(f"openai-compatible:http://127.0.0.1:9/v1#{SNAPSHOT}", mode=mode,
                                max_tokens=max(32, JUDGING[mode].min_max_tokens)), cassettes=tmp_path)
    return PROTOCOLS.get("judge")(judge, [], {}, failures=[])


def test_what_the_protocol_says_of_each_mode_comes_from_its_table_entry(tmp_path):
    help_text = PROTOCOLS.get("judge").config_keys["mode"].help
    for mode, how in JUDGING.items():
        assert f"{mode} ({how.summary}" in help_text == mode_help()
        info = _protocol(mode, tmp_path).metric_info("judge_score")
        assert info.unit == how.unit and info.description == f"LLM judge {SNAPSHOT} ({mode})"
        assert JudgeSettings("openai:x-2024-01-01", mode=mode, max_tokens=512).facts()["template"] == how.template
    assert modes_with(two_seats=True) == ("pairwise", "rubric") and modes_with(two_seats=False) == ("pointwise", "mmau-pro")
    assert [m for m, how in JUDGING.items() if how.verdicts] == ["pointwise"]  # checked against exact scoring


def test_a_new_mode_is_one_table_entry(monkeypatch, tmp_path):
    lenient = replace(JUDGING["pointwise"], summary="CORRECT/INCORRECT, leniently", unit="share called right (0-1)",
                      verdicts=False, min_max_tokens=64, long_reply="the lenient judge's reply")
    monkeypatch.setitem(engine.JUDGING, "lenient", lenient)
    assert "lenient" in modes_with(two_seats=False) and mode_help().endswith("or lenient (CORRECT/INCORRECT, "
                                                                            "leniently; max_tokens 64)")
    with pytest.raises(JudgeError, match=r"cuts the lenient judge's reply short: set \[judge\] max_tokens = 64"):
        JudgeSettings("openai:x-2024-01-01", mode="lenient")
    settings = JudgeSettings("openai:x-2024-01-01", mode="lenient", max_tokens=64)
    assert settings.facts()["template"] == "pointwise_v1"
    assert _protocol("lenient", tmp_path).metric_info("judge_score").unit == "share called right (0-1)"


def _score(cwd: Path, server, *flags: str) -> None:
    """``musiceval score judge answers.jsonl --json`` run from ``cwd`` (its cassettes: cwd/cassettes/judge)."""
    import os

    here = os.getcwd()
    os.chdir(cwd)
    try:
        code = cli.main(["score", "judge", str(cwd.parent / "answers.jsonl"), "--json",
                         "--model", f"openai-compatible:{server.base_url}#{SNAPSHOT}", *flags])
    finally:
        os.chdir(here)
    assert code == 0


def test_score_judge_keeps_the_judges_replies_under_cache_dir(tmp_path, monkeypatch, capsys):
    (tmp_path / "answers.jsonl").write_text("".join(FREEFORM.read_text("utf-8").splitlines(keepends=True)[:20]), "utf-8")
    for name in ("first", "again", "elsewhere", "default"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    monkeypatch.delenv("CI", raising=False)  # record what is not recorded (CI replays only)
    monkeypatch.setenv("MUSICEVAL_CACHE", str(tmp_path / "env-cache"))
    cache = str(tmp_path / "cache")
    with FakeOpenAIServer(reply=fair) as server:
        _score(tmp_path / "first", server, "--cache-dir", cache)
        asked = len(server.requests)
        first = json.loads(capsys.readouterr().out)
        assert asked > 0 and list((Path(cache) / "judge").rglob("*")), "the replies were not cached"
        # a rescoring from a folder with no cassettes: every reply from the cache, nothing sent
        _score(tmp_path / "again", server, "--cache-dir", cache)
        assert len(server.requests) == asked
        again = json.loads(capsys.readouterr().out)
        # with --replay too (no cassettes here): the cache answers before any cassette is read
        _score(tmp_path / "again", server, "--cache-dir", cache, "--replay")
        assert len(server.requests) == asked
        capsys.readouterr()
        # another cache and no cassettes: the judge is asked again (what the cache saved above)
        _score(tmp_path / "elsewhere", server, "--cache-dir", str(tmp_path / "other-cache"))
        assert len(server.requests) == 2 * asked
        capsys.readouterr()
        # no --cache-dir: $MUSICEVAL_CACHE/judge (musiceval.cache_dir.default_cache_dir)
        _score(tmp_path / "default", server)
    assert list((tmp_path / "env-cache" / "judge").rglob("*"))
    assert first["metrics"] == again["metrics"] and first["n"] == again["n"] > 0
