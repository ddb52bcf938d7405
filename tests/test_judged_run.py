"""A judged answer file through ``pytest evals/`` as a team runs it (docs/judge.md): the judge behind
the fake OpenAI-compatible server, recorded into the project's cassettes, then replayed with the
server gone and no key; the judge's own gates reported apart and able to make the verdict ERROR;
an unpinned judge refused or named; a baseline judged by another snapshot refused."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from musiceval.llm.fake_server import FakeOpenAIServer
from tests.fake_secrets import fake_key
from tests.judge_server import fair, first_seat, mumbling, option_reader, yes_man

REPO = Path(__file__).resolve().parents[1]
MUSICQA = REPO.parent / "shared" / "data" / "musicqa" / "dev_midashenglm.jsonl"


@pytest.fixture
def project(pytester):
    if not MUSICQA.is_file():
        pytest.skip(f"{MUSICQA} absent (../shared/data is optional)")
    (pytester.path / "evals").mkdir()
    shutil.copy(REPO / "evals" / "test_musiceval.py", pytester.path / "evals")
    lines = MUSICQA.read_text("utf-8").splitlines(keepends=True)[:180]  # 20 clips, 9 questions each
    (pytester.path / "musicqa.jsonl").write_text("".join(lines), "utf-8")
    return pytester


def _config(project, server, model: str = "judge-2024-08-06", extra: str = "", judge: str = "",
            file: str = "musicqa.jsonl", items: int | None = 180, judge_model: str = "") -> None:
    """``musiceval.toml`` judging ``file`` by the endpoint judge ``model`` of ``server`` (none: an
    address nothing answers), or by ``judge_model`` when given (a local one)."""
    judge_model = judge_model or f"openai-compatible:{server.base_url if server else 'http://127.0.0.1:9/v1'}#{model}"
    expected = f"expected_items = {items}" if items is not None else ""
    (project.path / "musiceval.toml").write_text(f"""
[[model]]
name = "MiDashengLM"
[[model.answers]]
protocol = "judge"
file = "{file}"
{expected}
{extra}
[judge]
model = "{judge_model}"
{judge}
""", "utf-8")


def _run(project, *args, results="results", cache="cache"):
    out = project.runpytest_subprocess("evals", "-p", "no:cacheprovider", "-p", "no:randomly",
                                       "--musiceval-results-dir", str(project.path / results),
                                       "--musiceval-cache-dir", str(project.path / cache), *args)
    run = json.loads((project.path / results / "results.json").read_text("utf-8"))
    return out, run


def _judge_scores(run) -> dict:
    return {(g["name"], g["outcome"]): round(g["estimate"], 12) for g in run["gates"] if g.get("estimate") is not None}


def test_a_judged_run_is_recorded_then_replayed_with_no_server_and_no_key(project, monkeypatch):
    key = fake_key("sk-")
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with FakeOpenAIServer(reply=fair) as server:
        _config(project, server)
        live, live_run = _run(project, "--musiceval-record-mode", "once")
        asked = len(server.requests)
    assert asked >= 180 and live_run["verdict"] == "PASSED", live.stdout.str()[-3000:]
    judge_gates = [g for g in live_run["gates"] if g["protocol"] == "judge" and g.get("subject") == "self-check"]
    assert {g["outcome"] for g in judge_gates} >= {"PASS", "N/A"}
    assert any("reference above another clip's" in g["name"] and g["outcome"] == "PASS" for g in judge_gates)
    model_gates = {g["name"]: g["outcome"] for g in live_run["gates"] if g["protocol"] == "judge" and g["subject"] == "model"}
    assert model_gates["MiDashengLM musicqa judge_score beats the strongest answer-blind strategy (the answers moved to "
                       "other items)"] == "PASS"
    stdout = live.stdout.str()  # the judge's own gates above the model's, in the terminal and the report
    assert stdout.index("-- the scorer of the declared model's answers") < stdout.index("-- about the declared model")
    assert all(g.get("scorer_check") for g in judge_gates)
    html = (project.path / "results" / "report.html").read_text("utf-8")
    assert html.index("scorer: judge") < html.index("reference above another clip") < html.index("listens: judge_score")
    cassettes = list((project.path / "cassettes" / "judge" / "musicqa").glob("*.yaml"))
    assert cassettes and not any(key in p.read_text("utf-8") for p in cassettes)
    assert key not in (project.path / "results" / "results.json").read_text("utf-8")

    monkeypatch.delenv("OPENAI_API_KEY")  # CI: no key, no server, an empty cache
    # the run's judge cache is the one musiceval score judge --cache-dir reads: from a folder without
    # cassettes, replaying only, every reply of a rescoring comes from it
    (project.path / "elsewhere").mkdir()
    scored = subprocess.run([sys.executable, "-m", "musiceval", "score", "judge", str(project.path / "musicqa.jsonl"),
                             "--json", "--replay", "--model", "openai-compatible:http://127.0.0.1:9/v1#judge-2024-08-06",
                             "--cache-dir", str(project.path / "cache")], cwd=project.path / "elsewhere",
                            capture_output=True, text=True, timeout=300)
    assert scored.returncode == 0, scored.stderr[-2000:]
    evaluated = next(t for t in live_run["tables"] if t["name"].endswith("evaluate()"))["rows"][0]
    assert json.loads(scored.stdout)["metrics"]["judge_score"] == pytest.approx(evaluated["judge_score"])
    replay, replay_run = _run(project, results="replay", cache="cache-ci")
    assert replay_run["verdict"] == live_run["verdict"] and replay.ret == live.ret == 0
    assert _judge_scores(replay_run) == _judge_scores(live_run)
    provenance = replay_run["meta"]["provenance"]["scorer"]["protocols"]["judge"]["scorer"]
    assert provenance["model"] == "judge-2024-08-06" and provenance["parser"] and len(provenance["template_sha256"]) == 64


def test_the_judges_own_gates_make_the_verdict_error(project, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeOpenAIServer(reply=first_seat) as server:  # prefers whatever it reads first
        _config(project, server, judge='mode = "pairwise"')
        out, run = _run(project, "--musiceval-record-mode", "once")
    assert run["verdict"] == "ERROR" and out.ret == 1
    seats = [g for g in run["gates"] if "swap seats" in g["name"]]
    assert [g["outcome"] for g in seats] == ["FAIL"] and seats[0]["subject"] == "self-check"
    assert "musiceval: ERROR" in out.stdout.str().splitlines()[-1]

    with FakeOpenAIServer(reply=yes_man) as server:  # calls every answer correct without reading it
        _config(project, server, model="yes-2024-08-06")
        out, run = _run(project, "--musiceval-record-mode", "once", results="yes", cache="cache-yes")
    reads = [g for g in run["gates"] if "reference above another clip's" in g["name"]]
    assert [g["outcome"] for g in reads] == ["FAIL"] and run["verdict"] == "ERROR"


def test_an_unreadable_judge_reply_is_counted_shown_in_the_drill_down_and_gated(project, monkeypatch):
    from musiceval.report.sample_data import decode

    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeOpenAIServer(reply=mumbling(3)) as server:  # every third distinct prompt: no verdict
        _config(project, server)
        out, run = _run(project, "--musiceval-record-mode", "once")
    parse = [g for g in run["gates"] if g["protocol"] == "judge" and "parse rate" in g["name"]]
    assert [g["name"] for g in parse] == ["musicqa: the judge's replies are readable (parse rate at least 80%)"]
    assert [g["outcome"] for g in parse] == ["FAIL"] and 0.5 < parse[0]["estimate"] < 0.8, out.stdout.str()[-3000:]
    # the parse rate is the judge's own gate: a judge that cannot be read is the scorer's fault (docs/judge.md)
    assert run["verdict"] == "ERROR" and out.ret == 1
    rows = decode((project.path / "results" / "report.html").read_text("utf-8"))["judge"]
    unread = [r for r in rows if r.get("failure")]
    assert unread and all(r["unmapped"] and r["failure"].startswith("judge reply unreadable: 'I would rather not say.'")
                          for r in unread)


def test_an_unpinned_judge_is_refused_unless_allowed_and_then_named(project, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeOpenAIServer(reply=fair) as server:
        _config(project, server, model="gpt-4o-mini")  # refused at start-up, before any test or call
        out = project.runpytest_subprocess("evals", "-p", "no:cacheprovider", "--musiceval-results-dir",
                                           str(project.path / "refused"))
        assert out.ret == 2 and not (project.path / "refused").exists() and server.requests == []
        assert ("[judge]: judge 'gpt-4o-mini' names no dated snapshot or revision" in out.stderr.str() + out.stdout.str())
        assert "allow_unpinned = true" in out.stderr.str() + out.stdout.str()
        _config(project, server, model="gpt-4o-mini", judge="allow_unpinned = true")
        out, run = _run(project, "--musiceval-record-mode", "once", results="allowed")
    line = out.stdout.str().splitlines()[-1]
    assert "unpinned: LLM judge gpt-4o-mini" in line and run["verdict_detail"]["line"] == line.split("; report:")[0]
    assert run["verdict"] == "PASSED"


def test_a_baseline_judged_by_another_snapshot_is_refused(project, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeOpenAIServer(reply=fair) as server:
        _config(project, server, model="judge-2024-05-13")
        _run(project, "--musiceval-record-mode", "once", results="v1")
        # judged by the same snapshot: compared, item by item
        _config(project, server, model="judge-2024-05-13", extra='[baseline]\nresults = "v1"')
        out, same = _run(project, "--musiceval-record-mode", "once", results="same")
        _config(project, server, model="judge-2024-08-06", extra='[baseline]\nresults = "v1"')
        out, run = _run(project, "--musiceval-record-mode", "once", results="v2")
    regression = [g for g in same["gates"] if g["protocol"] == "judge" and "not worse than" in g["name"]]
    assert any("judge_score" in g["name"] for g in regression) and {g["outcome"] for g in regression} == {"PASS"}
    assert same["verdict"] == "PASSED"
    assert run["verdict"] == "ERROR" and out.ret == 1
    assert "not comparable with the baseline" in run["verdict_detail"]["reasons"][0]
    assert "scorer.protocols.judge.scorer.model: judge-2024-05-13 (A) != judge-2024-08-06 (B)" in run["verdict_detail"]["reasons"][0]
    # musiceval compare refuses the two runs too (exit 2), naming what differs
    compared = project.run(sys.executable, "-m", "musiceval", "compare", str(project.path / "v1"), str(project.path / "v2"))
    assert compared.ret == 2
    assert "scorer.protocols.judge.scorer.model: judge-2024-05-13 (A) != judge-2024-08-06 (B)" in compared.stderr.str()
    assert project.run(sys.executable, "-m", "musiceval", "compare", str(project.path / "v1"),
                       str(project.path / "same")).ret == 0


def test_a_judge_that_disagrees_with_the_option_matcher_fails_on_multiple_choice(project, monkeypatch):
    source = MUSICQA.parents[1] / "muchomusic" / "dev_midashenglm.jsonl"
    if not source.is_file():
        pytest.skip(f"{source} absent (../shared/data is optional)")
    (project.path / "choice.jsonl").write_text("".join(source.read_text("utf-8").splitlines(keepends=True)[:120]), "utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    # the reader maps letters to options as the matcher does; fair compares words, and a letter shares none
    for reply, model, results in ((option_reader, "reader-2024-08-06", "reader"), (fair, "words-2024-08-06", "words")):
        with FakeOpenAIServer(reply=reply) as server:
            _config(project, server, model, file="choice.jsonl", items=120)
            out, run = _run(project, "--musiceval-record-mode", "once", results=results, cache=f"cache-{results}")
        exact = [g for g in run["gates"] if "as the option matcher does" in g["name"]]
        assert len(exact) == 1 and exact[0]["scorer_check"] and exact[0]["subject"] == "self-check"
        if reply is option_reader:
            assert exact[0]["outcome"] == "PASS" and "Cohen's kappa 1.000" in exact[0]["name"]
            assert run["verdict"] != "ERROR"
        else:
            assert exact[0]["outcome"] == "FAIL" and "Cohen's kappa 0.000" in exact[0]["name"]
            assert run["verdict"] == "ERROR" and out.ret == 1


def test_a_judged_source_without_a_judge_is_refused_at_start_up(project):
    (project.path / "musiceval.toml").write_text('[[model]]\nname = "m"\n[[model.answers]]\nprotocol = "judge"\n'
                                                 'file = "musicqa.jsonl"\n', "utf-8")
    out = project.runpytest_subprocess("evals", "-p", "no:cacheprovider")
    text = out.stderr.str() + out.stdout.str()
    assert out.ret == 2 and "[judge]: no judge configured: set [judge] model" in text and "Traceback" not in text


def _shortened(path: Path, out: Path) -> None:
    """The same items, each answer cut to its first three words: a release that says less."""
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    out.write_text("".join(json.dumps({**r, "model_output": " ".join(r["model_output"].split()[:3])}) + "\n"
                           for r in rows), "utf-8")


def test_the_answers_are_judged_side_by_side_with_the_baseline_release(project, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    _shortened(project.path / "musicqa.jsonl", project.path / "short.jsonl")
    for ours, theirs, expected in (("musicqa.jsonl", "short.jsonl", "PASS"), ("short.jsonl", "musicqa.jsonl", "FAIL")):
        with FakeOpenAIServer(reply=fair) as server:  # pairwise: prefers the answer with more content words
            _config(project, server, file=ours, extra='label = "musicqa"\n[baseline]\nname = "v1"\n[[baseline.answers]]\n'
                                                      f'protocol = "judge"\nfile = "{theirs}"\nlabel = "musicqa"')
            out, run = _run(project, "--musiceval-record-mode", "once", results=f"r-{ours}", cache=f"c-{ours}")
            both_seats = sum("Answer 1:" in b["prompt"] for b in server.bodies)
        side = [g for g in run["gates"] if "judged side by side with v1" in g["name"]]
        assert [g["outcome"] for g in side] == [expected] and side[0]["subject"] == "model"
        assert both_seats >= 2 * 150  # each item asked in both seats (identical answers are asked once)
        if expected == "FAIL":  # a gate about the model: the word is FAILED, not ERROR
            assert run["verdict"] == "FAILED" and out.ret == 1


def test_a_judge_that_disagrees_with_itself_fails_its_self_consistency_gate(project, monkeypatch):
    def coin(body):  # a verdict that follows the sample's seed: samples 0, 1, 2 say C, I, C
        return "VERDICT: CORRECT" if body["seed"] % 2 == 0 else "VERDICT: INCORRECT"

    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeOpenAIServer(reply=coin) as server:
        _config(project, server, judge="samples = 3\ntemperature = 0.7")
        out, run = _run(project, "--musiceval-record-mode", "once")
    agree = [g for g in run["gates"] if "samples agree with their majority" in g["name"]]
    assert [g["outcome"] for g in agree] == ["FAIL"] and agree[0]["estimate"] == pytest.approx(2 / 3)
    assert agree[0]["subject"] == "self-check" and run["verdict"] == "ERROR" and out.ret == 1
    assert run["meta"]["provenance"]["scorer"]["protocols"]["judge"]["scorer"]["decoding"] == {
        "temperature": 0.7, "max_tokens": 32, "samples": 3}


def test_a_tiny_local_transformers_judge_runs_the_whole_judged_path(project, tmp_path):
    """``[judge] model = "hf:<dir>"``: no endpoint, no cassette; pinned by its weights' hash. Random
    weights say nothing readable: every item a counted failure, the judge's parse rate gated; a
    second run reads every reply from the cache."""
    pytest.importorskip("transformers")
    from musiceval.models.tiny import build_tiny_qwen2_audio

    model_dir = build_tiny_qwen2_audio(tmp_path / "tiny-judge")
    lines = (project.path / "musicqa.jsonl").read_text("utf-8").splitlines(keepends=True)[:36]  # 4 clips
    (project.path / "musicqa.jsonl").write_text("".join(lines), "utf-8")
    _config(project, None, items=None, judge_model=f"hf:{model_dir}", judge="max_tokens = 8")
    out, run = _run(project)
    scorer = run["meta"]["provenance"]["scorer"]["protocols"]["judge"]["scorer"]
    assert scorer["model"] == f"hf:{model_dir}" and len(scorer["template_sha256"]) == 64
    parse = [g for g in run["gates"] if "the judge's replies are readable" in g["name"]]
    assert [g["outcome"] for g in parse] == ["FAIL"] and parse[0]["estimate"] < 0.8
    assert run["verdict"] == "ERROR" and out.ret == 1 and "unpinned" not in run["verdict_detail"]["line"]
    assert not (project.path / "cassettes").exists()  # a local judge is not recorded: its cache and weights are
    replies = sorted(p for p in (project.path / "cache").rglob("*") if p.is_file() and "judge" in p.parts)
    assert replies  # one file per reply
    again, rerun = _run(project, results="again")  # the same cache folder: every reply read from it, none added
    assert _judge_scores(rerun) == _judge_scores(run) and rerun["verdict"] == run["verdict"]
    assert sorted(p for p in (project.path / "cache").rglob("*") if p.is_file() and "judge" in p.parts) == replies


def test_a_call_the_cassettes_lack_stops_the_run_naming_the_item(project, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _config(project, None)  # CI: replay only, no cassette recorded yet
    out = project.runpytest_subprocess("evals", "-p", "no:cacheprovider", "--musiceval-results-dir",
                                       str(project.path / "results"), "--musiceval-cache-dir", str(project.path / "cache"))
    line = out.stdout.str().splitlines()[-1]  # the verdict line names the item and how to record
    assert out.ret == 1 and line.startswith("musiceval: ERROR") and "JudgeCassetteMiss" in line
    assert "hold no reply to its call about item 'audios_eval_" in line and "--musiceval-record-mode once" in line
    assert not (project.path / "cassettes").exists()  # replaying records nothing
