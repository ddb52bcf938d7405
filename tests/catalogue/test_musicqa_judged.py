"""MusicQA judged against its reference answers (docs/benchmarks.md, docs/judge.md): the
``musicqa-judged`` entry reads the prepared folder of ``musicqa`` (the same questions and clips,
fetched and unpacked once) and is scored by the LLM judge in its pointwise mode. A hub-layout
mirror of ``mu-llama/MusicQA`` (``EvalMusicQA.json`` and ``audios.zip``, the layout
``musiceval.data.musicqa.load_musicqa_release`` reads), prepared offline; the tiny Qwen2-Audio
checkpoint answers through ``musiceval run``, a scripted judge behind the fake OpenAI-compatible
server grades the answers, and the run is replayed from its cassettes with the server gone."""
from __future__ import annotations

import io
import json
import zipfile

import pytest

from musiceval.catalogue import get_benchmark
from musiceval.catalogue.prepare import ensure_prepared, prepared_dir
from tests.catalogue.mirror import hub_dataset, musiceval_cli, offline, tiny_run, tone_bytes

NAME = "musicqa-judged"
#: two clips, four questions each (MusicQA asks every clip its four questions)
QUESTIONS = ("Describe the audio", "Describe the audio in detail", "What do you hear in the audio?",
             "What can be inferred from the audio?")
REFERENCES = {"c0": "A calm solo piano plays a slow melody.", "c1": "Loud electric guitars and drums play rock."}


def _files() -> dict[str, bytes]:
    rows = [{"audio_name": f"{clip}.wav", "conversation": [{"from": "human", "value": q}, {"from": "gpt", "value": ref}]}
            for clip, ref in REFERENCES.items() for q in QUESTIONS]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for k, clip in enumerate(REFERENCES):
            zf.writestr(f"audios/{clip}.wav", tone_bytes(220.0 * (k + 1)))
        zf.writestr("audios/not_in_the_eval_split.wav", tone_bytes(990.0))
    return {"EvalMusicQA.json": json.dumps(rows).encode(), "audios.zip": buf.getvalue()}


@pytest.fixture
def musicqa_mirror(mirror):
    hub_dataset(mirror["hub"], "mu-llama/MusicQA", _files())
    return mirror


def test_the_judged_entry_reads_the_prepared_folder_of_musicqa(musicqa_mirror):
    judged, plain = get_benchmark(NAME), get_benchmark("musicqa")
    assert (judged.protocol, plain.protocol) == ("judge", "freeform")
    assert judged.options["judge"] == {"mode": "pointwise"} and judged.items == plain.items
    assert prepared_dir(musicqa_mirror["data"], judged) == prepared_dir(musicqa_mirror["data"], plain)
    first = ensure_prepared(judged, musicqa_mirror["data"], progress=False, log=lambda line: None)
    assert not first.reused and first.benchmark.name == "musicqa"
    assert first.lock.questions == 8 and len(first.lock.item_clips) == 8
    again = ensure_prepared(plain, musicqa_mirror["data"], progress=False, log=lambda line: None)
    assert again.reused and again.directory == first.directory  # fetched and unpacked once
    assert sorted(p.name for p in (musicqa_mirror["data"]).iterdir()) == ["musicqa"]


def test_data_list_names_the_folder_it_reads():
    done = musiceval_cli("data", "list", "--json", timeout=120)
    rows = {row["name"]: row for row in json.loads(done.stdout)["benchmarks"]}
    assert rows[NAME]["prepared_as"] == "musicqa" and rows["musicqa"]["prepared_as"] == ""
    assert rows[NAME]["protocol"] == "judge" and "pointwise" in rows[NAME]["parser"]


@pytest.mark.slow
def test_musiceval_run_judges_musicqa_answers_against_the_reference_then_replays(tiny_qwen, musicqa_mirror, tmp_path):
    from musiceval.llm.fake_server import FakeOpenAIServer
    from tests.fake_secrets import fake_key
    from tests.judge_server import fair

    key = fake_key("musicqa")
    env = {**offline(musicqa_mirror), "MUSICEVAL_CACHE": str(tmp_path / "cache"), "OPENAI_API_KEY": key, "CI": ""}
    out = tmp_path / "run"
    with FakeOpenAIServer(reply=fair) as server:
        command = tiny_run(NAME, tiny_qwen, musicqa_mirror, tmp_path,
                           "--option", f"judge.model=openai-compatible:{server.base_url}#judge-2024-08-06")
        done = musiceval_cli(*command, env=env)
        prompts = [m["messages"][-1]["content"] for m in server.requests]
    results = json.loads((out / "results" / "results.json").read_text("utf-8")) if (out / "results").is_dir() else {}
    assert results, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == (0 if results["verdict"] == "PASSED" else 1)
    assert results["verdict"] in done.stdout.strip().splitlines()[-1]
    assert "covers 8 of 5,040 items" in json.dumps(results)
    # pointwise: each answer graded against MusicQA's reference
    texts = [p if isinstance(p, str) else " ".join(x.get("text", "") for x in p) for p in prompts]
    assert any("Answer to grade:" in t and REFERENCES["c0"] in t for t in texts)
    config = (out / "musiceval.toml").read_text("utf-8")
    assert 'protocol = "judge"' in config and 'mode = "pointwise"' in config
    assert results["meta"]["provenance"]["scorer"]["protocols"]["judge"]["scorer"]["model"] == "judge-2024-08-06"
    cassettes = list((out / "cassettes" / "judge" / NAME).glob("*.yaml"))
    assert cassettes and not any(key in p.read_text("utf-8") for p in cassettes)

    again = musiceval_cli(*command, "--replay", env={**env, "OPENAI_API_KEY": "", "MUSICEVAL_CACHE": str(tmp_path / "cache-ci")})
    replayed = json.loads((out / "results" / "results.json").read_text("utf-8"))
    assert again.returncode == done.returncode and replayed["verdict"] == results["verdict"], again.stderr[-3000:]

    def judged(run):
        return {g["name"]: (g["outcome"], g.get("estimate")) for g in run["gates"] if g["protocol"] == "judge"}

    assert judged(replayed) == judged(results) and judged(results)


def test_a_judged_run_with_two_sampled_repeats_gives_one_verdict_and_agreement_findings(musicqa_mirror, tmp_path,
                                                                                         monkeypatch, capsys):
    """``musiceval run --repeats 2`` on a judged benchmark (docs/evaluate-your-model.md, "Sampled
    answers"): the judge grades every repeat's answer against the reference, the coverage gate
    counts each question once, a FINDING says how the repeats agree, and the run ends in one verdict."""
    from musiceval.cli import main as cli_main
    from musiceval.llm.fake_server import FakeOpenAIServer
    from musiceval.suite.repeats import repeat_seed
    from tests.fake_secrets import fake_key
    from tests.judge_server import fair

    first, second = REFERENCES["c0"], REFERENCES["c1"]

    def sampled(body: dict) -> str:  # repeat 0 describes clip c0 whatever it hears, every other repeat c1
        return first if int(body.get("seed") or 0) == repeat_seed(0, 0) else second

    monkeypatch.setenv("OPENAI_API_KEY", fake_key("musicqa"))
    monkeypatch.setenv("CI", "")  # record the judge's calls, as on a workstation
    out = tmp_path / "out"
    with FakeOpenAIServer(reply=sampled) as model, FakeOpenAIServer(reply=fair) as judge:
        code = cli_main(["run", "--model", f"openai-compatible:{model.base_url}#echo", "--benchmarks", NAME,
                         "--data-root", str(musicqa_mirror["data"]), "--cache-dir", str(tmp_path / "cache"),
                         "--out", str(out), "--no-progress", "--repeats", "2", "--model-args", "temperature=0.8",
                         "--conditions", "correct,noise",
                         "--option", f"judge.model=openai-compatible:{judge.base_url}#judge-2024-08-06"])
        seeds = {b["seed"] for b in model.bodies}
        graded = [b["prompt"] for b in judge.bodies if "Answer to grade:" in b["prompt"]]
    printed = capsys.readouterr()
    results = json.loads((out / "results" / "results.json").read_text("utf-8"))
    assert seeds == {repeat_seed(0, 0), repeat_seed(0, 1)}, printed.err[-3000:]
    assert results["verdict"] in ("PASSED", "FAILED", "INCONCLUSIVE", "ERROR")  # one verdict for the run
    assert code == (0 if results["verdict"] == "PASSED" else 1) and results["meta"]["repeats"] == 2
    assert any(f"Answer to grade: {first}" in p for p in graded) and any(f"Answer to grade: {second}" in p for p in graded)
    rows = [json.loads(line) for line in (out / f"{NAME}.jsonl").read_text("utf-8").splitlines()]
    ids = {r["id"] for r in rows}
    assert len(ids) == 8 and {(r["id"], r["condition"], r["repeat"]) for r in rows} == {
        (i, c, rep) for i in ids for c in ("correct", "noise") for rep in (0, 1)}
    text = json.dumps(results["gates"])
    assert "covers 8 of 5,040 items" in text  # the questions, not 8 x 2 rows
    (agree,) = [g for g in results["gates"] if "agree across 2 sampled repeats" in g["name"]]
    assert agree["outcome"] == "FINDING" and agree["n"] == 8 and agree["estimate"] == 0.0
    # repeat 0 describes c0, repeat 1 c1: every question is judged right once and wrong once
    assert "judge_score flips between right and wrong across repeats on 8 items" in agree["detail"]
