"""Lyra's ``CMI_Lyra_<task>_test_available.jsonl`` (nicolaus625/CMI-bench@35235cb, the test clips the
authors could download) as the entries ``cmi-bench/Lyra_<task>_test_available``: pinned with their
digest unread, fetched from a release-URL mirror offline, prepared against clips at the generator's
paths, their answers written under the toolkit's name and scored as the task. Rows: the real first
three rows of each upstream file (fixtures/mir/instructions/development, fixtures/README.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from musiceval.catalogue import get_benchmark
from musiceval.catalogue.answer_files import answer_path, answers_entry
from musiceval.catalogue.cmibench import DEVELOPMENT_COMMIT, DEVELOPMENT_FILES, REPO, VARIANT_FILES
from musiceval.catalogue.digests import file_sha256
from musiceval.catalogue.prepare import prepare
from musiceval.catalogue.spec import benchmark_names
from musiceval.data.cmibench import parse_filename
from tests.catalogue.mirror import finished_run, musiceval_cli, tone, url_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mir" / "instructions" / "development"
TASKS = ("Lyra_instrument", "Lyra_genre", "Lyra_place", "Lyra_dance")


def _rows(task: str) -> list[dict]:
    text = (FIXTURES / f"CMI_{task}_test_available.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_the_four_files_are_entries_of_their_task_pinned_to_the_development_commit():
    assert sorted(VARIANT_FILES) == sorted((t, "test_available") for t in TASKS)
    for (task, variant), (path, commit) in VARIANT_FILES.items():
        bench = get_benchmark(f"cmi-bench/{task}_test_available")
        assert path == f"data/lyra/CMI_{task}_test_available.jsonl" and commit == DEVELOPMENT_COMMIT
        assert bench.source.urls == (f"{REPO}/{DEVELOPMENT_COMMIT}/{path}",) and bench.source.revision == commit
        assert (bench.task, bench.variant, bench.task_label) == (task, "test_available", f"{task}_test_available")
        assert bench.digests == {Path(path).name: None} and "not read here" in bench.verified and bench.items is None
        assert bench.protocol == "mir" and bench.answer_format == "cmi-bench"
        assert bench.audio == get_benchmark(f"cmi-bench/{task}").audio  # the same clips as the task's entry


@pytest.mark.parametrize("task", TASKS)
def test_prepared_offline_from_the_url_layout(task, mirror, tmp_path):
    path, commit = VARIANT_FILES[(task, "test_available")]
    name = Path(path).name
    url_file(mirror["urls"], f"{REPO}/{commit}/{path}", (FIXTURES / name).read_bytes())
    rows = _rows(task)
    assert rows and all(r["split"] == ["test"] for r in rows)  # every row the file holds is asked
    for row in rows[1:]:  # the first row's clip is missing
        tone(tmp_path / "cmi" / row["audio_path"][0], seconds=1.0, fmt="WAV")
    report = prepare(get_benchmark(f"cmi-bench/{task}_test_available"), mirror["data"], audio_dir=tmp_path / "cmi",
                     progress=False, log=lambda _: None)
    lock = report.lock
    assert lock.items == len(rows) and lock.source["revision"] == DEVELOPMENT_COMMIT in lock.source["id"]
    assert lock.question_files == {name: file_sha256(FIXTURES / name)}  # the lock records what was fetched
    assert lock.with_audio == len(rows) - 1 and len(lock.missing) == 1 and not lock.corrupt


@pytest.mark.parametrize("task", TASKS)
def test_the_questions_are_the_rows_as_written(task):
    name = f"CMI_{task}_test_available.jsonl"
    questions = get_benchmark(f"cmi-bench/{task}_test_available").questions({name: FIXTURES / name})
    rows = _rows(task)
    assert [q.id for q in questions] == [f"{no}|{r['audio_path'][0]}" for no, r in enumerate(rows)]
    assert [(q.prompt, q.reference, q.audio_end) for q in questions] == [
        (r["instruction"], r["output"], r["audio_end"]) for r in rows]
    assert {q.meta["task"] for q in questions} == {task}


def test_answers_are_written_under_the_toolkits_name_and_read_back_as_the_task(mirror, tmp_path):
    path, commit = VARIANT_FILES[("Lyra_genre", "test_available")]
    url_file(mirror["urls"], f"{REPO}/{commit}/{path}", (FIXTURES / Path(path).name).read_bytes())
    bench = get_benchmark("cmi-bench/Lyra_genre_test_available")
    report = prepare(bench, mirror["data"], audio_dir=tmp_path, progress=False, log=lambda _: None)
    target = answer_path(bench, tmp_path / "out", "Qwen/Qwen2-Audio")
    assert target.name == "Qwen_Qwen2-Audio_Lyra_genre_test_available.jsonl"  # build_output_path's name at 35235cb
    named = parse_filename(target)
    assert (named.model, named.task, named.variant) == ("Qwen_Qwen2-Audio", "Lyra_genre", "test_available")
    assert answers_entry(bench, target, report)["label"] == "Lyra_genre_test_available"
    # the task's own entry keeps its name, so both can run side by side
    assert answer_path(get_benchmark("cmi-bench/Lyra_genre"), tmp_path / "out", "m").name == "m_Lyra_genre.jsonl"


def test_cmi_bench_alone_leaves_the_variants_out_and_naming_one_asks_it():
    names = {b.name for b in benchmark_names("cmi-bench")}
    assert {f"cmi-bench/{t}" for t in DEVELOPMENT_FILES} <= names
    assert not any(n.endswith("_test_available") for n in names)
    assert [b.name for b in benchmark_names("cmi-bench/Lyra_dance_test_available,cmi-bench/Lyra_dance")] == [
        "cmi-bench/Lyra_dance_test_available", "cmi-bench/Lyra_dance"]


def test_data_list_shows_the_pin_and_the_unread_digest():
    done = musiceval_cli("data", "list", "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["benchmarks"]}
    for task in TASKS:
        row = rows[f"cmi-bench/{task}_test_available"]
        assert row["revision"] == DEVELOPMENT_COMMIT and row["digests"] == {f"CMI_{task}_test_available.jsonl": None}


@pytest.mark.slow
def test_musiceval_run_asks_the_task_and_its_variant_side_by_side(tiny_qwen, mirror, tmp_path):
    from tests.catalogue.mirror import offline, tiny_run

    for name in ("CMI_Lyra_dance.jsonl", "CMI_Lyra_dance_test_available.jsonl"):
        path = f"data/lyra/{name}"
        url_file(mirror["urls"], f"{REPO}/{DEVELOPMENT_COMMIT}/{path}", (FIXTURES / name).read_bytes())
    clips = tmp_path / "cmi"
    for row in _rows("Lyra_dance") + [json.loads(line) for line in
                                      (FIXTURES / "CMI_Lyra_dance.jsonl").read_text("utf-8").splitlines()]:
        if not (clips / row["audio_path"][0]).is_file():
            tone(clips / row["audio_path"][0], seconds=1.0, fmt="WAV")
    args = tiny_run("cmi-bench/Lyra_dance,cmi-bench/Lyra_dance_test_available", tiny_qwen, mirror, tmp_path,
                    "--audio-dir", f"cmi-bench/Lyra_dance={clips}",
                    "--audio-dir", f"cmi-bench/Lyra_dance_test_available={clips}")
    done = musiceval_cli(*args, env={**offline(mirror), "MUSICEVAL_URL_MIRROR": str(mirror["urls"]),
                                     "MUSICEVAL_CACHE": str(tmp_path / "cache"), "CI": ""})
    out = tmp_path / "run"
    results = finished_run(done, out)
    written = sorted(p.name for p in out.rglob("*_Lyra_dance*.jsonl"))
    assert len(written) == 2 and sum(n.endswith("_Lyra_dance_test_available.jsonl") for n in written) == 1, written
    datasets = results["meta"]["provenance"]["scorer"]["datasets"]
    assert {"cmi-bench/Lyra_dance", "cmi-bench/Lyra_dance_test_available"} <= set(datasets)
    sources = {s["source"]: s["file"] for s in results["sources"]}  # two sources, two sets of gates
    assert sorted(sources) == ["Lyra_dance", "Lyra_dance_test_available"]
    assert sources["Lyra_dance_test_available"].endswith("_Lyra_dance_test_available.jsonl")
    assert {g["source"] for g in results["gates"] if g.get("source")} == set(sources)
