"""AIR-Bench chat, music items: the catalogue's first judged entry (docs/benchmarks.md, docs/judge.md).

``Chat/Chat_meta.json`` is written in the layout OFA-Sys/AIR-Bench's ``Inference_Chat.py`` reads (a
JSON array of ``meta_info, question, answer_gt, path, task_name, dataset_name, uniq_id``; the clip at
``Chat/<task_name>_<dataset_name>/<path>``), with rows shaped like the repository's
``Chat_result_modelx.jsonl`` music rows, into a hub cache at the pinned commit; prepared offline,
asked by the tiny Qwen2-Audio checkpoint through ``musiceval run`` and judged by a scripted judge
behind the fake OpenAI-compatible server, recorded, then replayed with the server gone and no key.
A run that names no pinned judge is refused before anything is prepared or loaded."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from musiceval.catalogue import get_benchmark
from musiceval.catalogue.airbench import ITEMS, REVISION
from musiceval.catalogue.lock import MANIFEST_NAME
from musiceval.catalogue.prepare import prepare
from tests.catalogue.mirror import hub_dataset, musiceval_cli, offline, tiny_run, tone, tone_bytes

ROOT = Path(__file__).resolve().parents[2]
NAME = "airbench-chat-music"
CAPTION = ("{'description': 'A male vocalist sings this catchy pop song with acoustic guitar and clapping.', "
           "'instrument': \"['male vocalist', 'acoustic guitar', 'clapping']\"}")


def _row(uid, task, clip, question, answer, dataset="musiccaps"):
    return {"meta_info": CAPTION, "question": question, "answer_gt": answer, "path": clip, "task_name": task,
            "dataset_name": dataset, "uniq_id": uid}


#: four clips, eight usable music items (two tasks, several questions per clip), a speech item, and
#: rows that cannot be read as music items
ROWS = [
    _row(0, "speech_dialogue_QA", "568.38_596.46.wav", "What does the first speaker imply?", "More than six trillion.",
         dataset="fisher"),
    _row(1300, "music_QA", "rLQ93N6RJC0.wav", "What instruments can be heard in this music piece?",
         "Drums, acoustic guitar, bass, keyboard, and clapping."),
    _row(1301, "music_QA", "rLQ93N6RJC0.wav", "Who is the vocalist in this song?", "A male vocalist."),
    _row(1302, "music_QA", "jKjj66pRXZA.wav", "Is there any percussion in this song?", "No percussion, only a didgeridoo."),
    _row(1303, "music_QA", "jKjj66pRXZA.wav", "What instrument produces the drone?", "A didgeridoo drone."),
    _row(1304, "music_QA", "Ee6MP1bIRUA.wav", "What effect is prominently used on the guitars?", "Spring reverb."),
    _row(1305, "music_QA", "Ee6MP1bIRUA.wav", "Who sings over the guitars?", "A sultry female singer."),
    _row(1755, "music_generation_analysis_QA", "18mS4cLPOb8.wav", "How do the high female vocals shape the anthem?",
         "High female vocals in a major scale give an epic anthem feeling, broken by comic animal sounds."),
    _row(1756, "music_generation_analysis_QA", "18mS4cLPOb8.wav", "Why does the piece sound comic?",
         "An implied bear attack interrupts the serious anthem: parody and comedy."),
    _row(1306, "music_QA", "Ee6MP1bIRUA.wav", "What tempo is it?", ""),         # no reference
    _row(1307, "music_QA", "gone0000000.wav", "What genre is it?", "Reggae."),  # its clip is not in the release
    _row(1300, "music_QA", "rLQ93N6RJC0.wav", "A repeated id?", "Yes."),        # uniq_id repeats row 1
    {"question": "no task name", "answer_gt": "x", "path": "x.wav", "uniq_id": 1999},
    "not an object",
]
CLIPS = {"rLQ93N6RJC0": 220.0, "jKjj66pRXZA": 330.0, "Ee6MP1bIRUA": 440.0}


def _files(rows=ROWS) -> dict[str, bytes]:
    files = {"Chat/Chat_meta.json": json.dumps(rows).encode()}
    files.update({f"Chat/music_QA_musiccaps/{clip}.wav": tone_bytes(freq) for clip, freq in CLIPS.items()})
    files["Chat/music_generation_analysis_QA_musiccaps/18mS4cLPOb8.wav"] = tone_bytes(550.0)
    files["Chat/speech_dialogue_QA_fisher/568.38_596.46.wav"] = tone_bytes(660.0)  # not a music folder: not fetched
    files["Foundation/Foundation_meta.json"] = b"[]"
    return files


@pytest.fixture
def airbench_mirror(mirror):
    hub_dataset(mirror["hub"], "qyang1021/AIR-Bench-Dataset", _files(), commit=REVISION)
    return mirror


def test_the_music_rows_of_chat_meta_are_the_items(tmp_path):
    meta = tmp_path / "Chat_meta.json"
    meta.write_text(json.dumps(ROWS), encoding="utf-8")
    qs = {q.id: q for q in get_benchmark(NAME).questions({"Chat/Chat_meta.json": meta})}
    usable = {i: q for i, q in qs.items() if "unusable" not in q.meta}
    assert sorted(usable) == ["1300", "1301", "1302", "1303", "1304", "1305", "1307", "1755", "1756"]
    q = usable["1755"]
    assert q.prompt == q.question == ROWS[7]["question"]  # asked as written
    assert q.reference == ROWS[7]["answer_gt"] and q.group == "18mS4cLPOb8"
    assert q.audio_key == "music_generation_analysis_QA_musiccaps/18mS4cLPOb8.wav"
    assert usable["1300"].group == usable["1301"].group  # two questions about one clip
    assert "0" not in qs  # the speech item is not a music item
    reasons = {i: q.meta["unusable"] for i, q in qs.items() if "unusable" in q.meta}
    assert reasons == {
        "1306": "row 9 of Chat/Chat_meta.json (music_QA): answer_gt (the reference) is missing or empty",
        "row11": "row 11 of Chat/Chat_meta.json (music_QA): uniq_id 1300 repeats an earlier row",
        "row12": "row 12 of Chat/Chat_meta.json: no task_name: cannot tell whether it is a music item",
        "row13": "row 13 of Chat/Chat_meta.json: not an object (str): cannot tell whether it is a music item"}
    assert all(q.audio_key is None for i, q in qs.items() if i in reasons)


def test_the_audio_description_reaches_the_rubric_judges_prompt(tmp_path, monkeypatch):
    """``meta_info`` goes from Chat_meta.json into the item's meta, through the prepared manifest and
    the generated free-form answer file, to the judge's prompt in rubric mode (the entry's default),
    in both seats."""
    from musiceval.catalogue.answer_files import write_answers
    from musiceval.catalogue.prepare import manifest_row
    from musiceval.data.formats import load_answers
    from musiceval.data.manifest import load_manifest
    from musiceval.llm.fake_server import FakeOpenAIServer
    from musiceval.protocols import PROTOCOLS, ProtocolSettings
    from musiceval.records import Response
    from musiceval.suite.benchmark_runs import judge_defaults
    from tests.judge_server import fair

    bench = get_benchmark(NAME)
    assert judge_defaults([bench]) == {"mode": "rubric"}
    meta = tmp_path / "Chat_meta.json"
    meta.write_text(json.dumps(ROWS), encoding="utf-8")
    qs = [q for q in bench.questions({"Chat/Chat_meta.json": meta}) if q.id in ("1300", "1302", "1304")]
    assert {q.meta["description"] for q in qs} == {CAPTION}
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(manifest_row(q, f"{q.id}.wav", bench)) + "\n" for q in qs), "utf-8")
    items, failures = load_manifest(manifest)
    assert not failures and {i.meta["description"] for i in items} == {CAPTION}
    responses = [Response(i.id, "correct", "m", i.question, f"I hear {i.reference.lower()}") for i in items]

    lock = SimpleNamespace(source={}, items=3, with_audio=3, item_clips={}, question_files={}, clips={})
    path = write_answers(bench, SimpleNamespace(lock=lock), items, responses, tmp_path / "out", "m")  # as `musiceval run`
    assert all(json.loads(line)["description"] == CAPTION for line in path.read_text("utf-8").splitlines())
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    with FakeOpenAIServer(reply=fair) as server:
        settings = ProtocolSettings(seed=0, config_dir=str(tmp_path), record_mode="once", options={
            "model": f"openai-compatible:{server.base_url}#judge-2024-08-06", "cache_dir": str(tmp_path / "cache"),
            **judge_defaults([bench])})
        run = PROTOCOLS.get("judge").from_answers(load_answers(path, protocol="judge"), settings)
        scores = run.scores("judge_score")
        prompts = [b["prompt"] for b in server.bodies]
    assert scores.n == 3 and len(prompts) == 6  # two seats per item
    assert all(f"[Audio description]\n{CAPTION}\n" in p for p in prompts)


def test_prepared_offline_from_the_hub_layout_counting_every_unreadable_row(airbench_mirror):
    bench = get_benchmark(NAME)
    assert bench.protocol == "judge" and bench.source.revision == REVISION and not bench.source.unpinned
    report = prepare(bench, airbench_mirror["data"], progress=False, log=lambda _: None)
    lock = report.lock
    assert lock.source["resolved_revision"] == REVISION and lock.items == ITEMS == 500
    assert lock.with_audio == 8 and set(lock.item_clips) == {"1300", "1301", "1302", "1303", "1304", "1305", "1755", "1756"}
    assert lock.item_clips["1755"] == "music_generation_analysis_QA_musiccaps/18mS4cLPOb8.wav"
    assert lock.missing["1307"].startswith("no clip for 'music_QA_musiccaps/gone0000000.wav'")
    assert "answer_gt (the reference) is missing" in lock.missing["1306"]
    assert {"row11", "row12", "row13"} <= set(lock.missing) and not lock.corrupt
    assert list(lock.question_files) == ["Chat/Chat_meta.json"]
    assert any("holds 13 items, the catalogue 500" in w for w in report.warnings)
    audio = report.audio_root
    assert not (audio / "speech_dialogue_QA_fisher").exists()  # only the music folders are fetched
    rows = [json.loads(line) for line in (report.directory / MANIFEST_NAME).read_text("utf-8").splitlines()]
    assert {r["id"]: r["reference"] for r in rows}["1302"] == "No percussion, only a didgeridoo."
    assert all((audio / r["audio"]).is_file() for r in rows)


def test_the_datasets_own_chat_folder_as_audio_dir(mirror, tmp_path):
    hub_dataset(mirror["hub"], "qyang1021/AIR-Bench-Dataset", {"Chat/Chat_meta.json": json.dumps(ROWS).encode()},
                commit=REVISION)
    local = tmp_path / "AIR-Bench-Dataset"  # a copy downloaded elsewhere, passed whole
    for clip, freq in CLIPS.items():
        tone(local / "Chat" / "music_QA_musiccaps" / f"{clip}.wav", freq)
    report = prepare(get_benchmark(NAME), mirror["data"], audio_dir=local, progress=False, log=lambda _: None)
    assert report.lock.with_audio == 6 and report.lock.item_clips["1300"] == "Chat/music_QA_musiccaps/rLQ93N6RJC0.wav"
    assert "no clip for 'music_generation_analysis_QA_musiccaps/18mS4cLPOb8.wav'" in report.lock.missing["1755"]


@pytest.mark.parametrize("judge, said", [
    ((), "[judge]: no judge configured: set [judge] model to a pinned judge"),
    (("--option", "judge.model=openai:gpt-4o-mini"), "[judge]: judge 'gpt-4o-mini' names no dated snapshot or revision"),
])
def test_musiceval_run_refuses_a_judged_benchmark_without_a_pinned_judge_before_anything_runs(tmp_path, judge, said):
    done = musiceval_cli("run", "--model", f"hf:{tmp_path / 'no-such-model'}", "--benchmarks", f"hummusqa,{NAME}",
                "--data-root", str(tmp_path / "data"), "--out", str(tmp_path / "out"), "--no-progress", *judge,
                timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    line = done.stderr.strip().splitlines()[-1]
    assert f"{NAME} is scored by an LLM judge; {said}" in line
    assert "musiceval run takes the judge as --option judge.model=JUDGE, as docs/judge.md says" in line
    assert not (tmp_path / "data").exists() and not (tmp_path / "out").exists()  # nothing fetched, nothing written


def test_a_shard_run_scores_nothing_and_needs_no_judge(airbench_mirror, tmp_path):
    done = musiceval_cli("run", "--model", f"hf:{tmp_path / 'no-such-model'}", "--benchmarks", NAME, "--shard", "0/2",
                "--data-root", str(airbench_mirror["data"]), "--out", str(tmp_path / "out"), "--no-progress",
                env={"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(airbench_mirror["hub"])}, timeout=300)
    assert "LLM judge" not in done.stderr and f"prepared {NAME}: 8 of 500 items with audio" in done.stderr, done.stderr


def test_a_repeated_uniq_id_is_never_a_second_item_of_that_id(tmp_path):
    rows = [_row(1306, "music_QA", "a.wav", "What tempo is it?", ""), _row(1306, "music_QA", "a.wav", "Key?", "C major")]
    meta = tmp_path / "Chat_meta.json"
    meta.write_text(json.dumps(rows), encoding="utf-8")
    qs = get_benchmark(NAME).questions({"Chat/Chat_meta.json": meta})
    assert [(q.id, q.meta["unusable"].split(": ", 1)[1]) for q in qs] == [
        ("1306", "answer_gt (the reference) is missing or empty"), ("row1", "uniq_id 1306 repeats an earlier row")]


def test_pytest_with_a_judged_benchmark_and_no_judge_is_refused_at_start_up(pytester, tmp_path):
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "test_musiceval.py").write_text((ROOT / "evals" / "test_musiceval.py").read_text("utf-8"))
    out = pytester.runpytest_subprocess("evals", "-p", "no:cacheprovider", f"--musiceval-model=hf:{tmp_path / 'none'}",
                                        f"--musiceval-benchmarks={NAME}", f"--musiceval-data-dir={tmp_path}")
    text = out.stderr.str() + out.stdout.str()
    assert out.ret == 2 and "Traceback" not in text
    assert f"{NAME} is scored by an LLM judge; [judge]: no judge configured" in text
    assert "--musiceval-option judge.model=JUDGE" in text


@pytest.mark.slow
def test_musiceval_run_judges_what_the_tiny_model_answered_then_replays_the_judge(tiny_qwen, airbench_mirror, tmp_path):
    from musiceval.llm.fake_server import FakeOpenAIServer
    from tests.fake_secrets import fake_key
    from tests.judge_server import fair

    key = fake_key("airbench")
    env = {**offline(airbench_mirror), "MUSICEVAL_CACHE": str(tmp_path / "cache"), "OPENAI_API_KEY": key, "CI": ""}
    out = tmp_path / "run"
    with FakeOpenAIServer(reply=fair) as server:
        command = tiny_run(NAME, tiny_qwen, airbench_mirror, tmp_path,
                           "--option", f"judge.model=openai-compatible:{server.base_url}#judge-2024-08-06")
        done = musiceval_cli(*command, env=env)
        asked = len(server.requests)
    results = json.loads((out / "results" / "results.json").read_text("utf-8")) if (out / "results").is_dir() else {}
    assert results, done.stdout[-3000:] + done.stderr[-3000:]
    assert results["verdict"] in ("PASSED", "FAILED", "INCONCLUSIVE", "ERROR")
    assert done.returncode == (0 if results["verdict"] == "PASSED" else 1)
    assert results["verdict"] in done.stdout.strip().splitlines()[-1]
    assert asked >= 8  # each answer judged, and the judge's own checks
    gates = json.dumps(results)
    assert "covers 8 of 500 items" in gates
    scorer = results["meta"]["provenance"]["scorer"]
    assert scorer["protocols"]["judge"]["scorer"]["model"] == "judge-2024-08-06"
    assert scorer["datasets"][NAME]["revision"] == REVISION
    assert any(g["protocol"] == "judge" and g.get("subject") == "self-check" for g in results["gates"])
    answers = [json.loads(line) for line in (out / f"{NAME}.jsonl").read_text("utf-8").splitlines()]
    assert {a["condition"] for a in answers} == {"correct", "random", "noise", "text_only"}
    assert {a["reference"] for a in answers if a["id"] == "1304"} == {"Spring reverb."}
    config = (out / "musiceval.toml").read_text("utf-8")
    assert "[judge]" in config and "#judge-2024-08-06" in config and 'protocol = "judge"' in config
    cassettes = list((out / "cassettes" / "judge" / NAME).glob("*.yaml"))
    assert cassettes and not any(key in p.read_text("utf-8") for p in cassettes)

    # CI: the server gone, no key, the judge's calls replayed from the cassettes; the answers from the cache
    again = musiceval_cli(*command, "--replay", env={**env, "OPENAI_API_KEY": "", "MUSICEVAL_CACHE": str(tmp_path / "cache-ci")})
    replayed = json.loads((out / "results" / "results.json").read_text("utf-8"))
    assert "0 generated" in again.stderr and again.returncode == done.returncode, again.stdout[-3000:]
    assert replayed["verdict"] == results["verdict"]

    def judged(run):
        return {g["name"]: (g["outcome"], g.get("estimate")) for g in run["gates"] if g["protocol"] == "judge"}

    assert judged(replayed) == judged(results)
