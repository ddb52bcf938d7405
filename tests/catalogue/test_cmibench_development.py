"""The CMI-Bench development branch's entries (nicolaus625/CMI-bench@35235cb): their instruction
files fetched from a release-URL mirror offline (``raw.githubusercontent.com/<repo>/<commit>/<path>``
as upstream lays them out), prepared against clips at the paths the generators write, listed with
their pin, licence and unread digest, and asked by the tiny Qwen2-Audio checkpoint through
``musiceval run``. Rows: fixtures/mir/instructions/development (real rows, fixtures/README.md)."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from musiceval.catalogue import get_benchmark
from musiceval.catalogue.cmibench import DEVELOPMENT_COMMIT, DEVELOPMENT_FILES, REPO
from musiceval.catalogue.digests import file_sha256
from musiceval.catalogue.prepare import PrepareError, prepare
from tests.catalogue.mirror import finished_run, musiceval_cli, offline, tiny_run, tone, url_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mir" / "instructions" / "development"


def _mirror_file(mirror, task: str) -> Path:
    path, commit = DEVELOPMENT_FILES[task]
    return url_file(mirror["urls"], f"{REPO}/{commit}/{path}", (FIXTURES / Path(path).name).read_bytes())


def _test_rows(task: str) -> list[dict]:
    rows = [json.loads(line) for line in (FIXTURES / f"CMI_{task}.jsonl").read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if "test" in r["split"]]


def _clips(root: Path, task: str, without_first: bool = False) -> None:
    """A clip at every test row's ``audio_path[0]`` under ``root`` (the data/ tree), the first row's removed."""
    rows = _test_rows(task)
    for row in rows:
        tone(root / row["audio_path"][0], seconds=1.0, fmt="WAV")
    if without_first:
        (root / rows[0]["audio_path"][0]).unlink()


def test_every_entry_is_pinned_to_the_development_commit_with_its_digest_unread():
    assert DEVELOPMENT_COMMIT == "35235cb0394c492c39eb3ae6adbb504c7fd4b34c"
    for task, (path, commit) in DEVELOPMENT_FILES.items():
        bench = get_benchmark(f"cmi-bench/{task}")
        assert bench.source.revision == commit == DEVELOPMENT_COMMIT and not bench.source.unpinned
        assert bench.source.urls == (f"{REPO}/{commit}/{path}",) and bench.task == task and bench.protocol == "mir"
        assert bench.digests == {Path(path).name: None} and "not read here" in bench.verified
        assert bench.licence.startswith("CC BY 4.0 (instructions)") and bench.items is None


def test_data_list_shows_the_pin_licence_and_the_unread_digest():
    done = musiceval_cli("data", "list", "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["benchmarks"]}
    row = rows["cmi-bench/SongFormBench"]
    assert row["revision"] == DEVELOPMENT_COMMIT and row["digests"] == {"CMI_SongFormBench.jsonl": None}
    assert "SongFormBench dataset's licence (not verified here)" in row["licence"]
    text = musiceval_cli("data", "list").stdout
    assert "sha256 of CMI_Lyra_dance.jsonl: not read here (the lock records the fetched file)" in text


@pytest.mark.parametrize("task", ["ArabAndalusian_form", "Lyra_dance", "Lyra_place", "SongFormBench"])
def test_prepared_offline_from_the_url_layout(task, mirror, tmp_path):
    _mirror_file(mirror, task)
    _clips(tmp_path / "cmi", task, without_first=True)
    report = prepare(get_benchmark(f"cmi-bench/{task}"), mirror["data"], audio_dir=tmp_path / "cmi", progress=False,
                     log=lambda _: None)
    lock, rows = report.lock, _test_rows(task)
    name = Path(DEVELOPMENT_FILES[task][0]).name
    assert lock.items == len(rows) and lock.source["revision"] == DEVELOPMENT_COMMIT in lock.source["id"]
    assert lock.question_files == {name: file_sha256(FIXTURES / name)}  # the lock records what was fetched
    # the first row's clip is missing; in the Arab-Andalusian file the second section shares it
    shares = sum(r["audio_path"] == rows[0]["audio_path"] for r in rows)
    assert lock.with_audio == len(rows) - shares and len(lock.missing) == shares and not lock.corrupt


def test_a_known_digest_that_differs_stops_the_prepare(mirror, tmp_path):
    _mirror_file(mirror, "Lyra_dance")
    bench = dataclasses.replace(get_benchmark("cmi-bench/Lyra_dance"), digests={"CMI_Lyra_dance.jsonl": "0" * 64})
    with pytest.raises(PrepareError, match="CMI_Lyra_dance.jsonl has sha256 .* not 000000000000 as at revision 35235cb"):
        prepare(bench, mirror["data"], audio_dir=tmp_path, progress=False, log=lambda _: None)


@pytest.mark.slow
def test_musiceval_run_asks_the_tiny_model_and_scores_lyra_dance(tiny_qwen, mirror, tmp_path):
    _mirror_file(mirror, "Lyra_dance")
    _clips(tmp_path / "cmi", "Lyra_dance")
    out = tmp_path / "run"
    args = tiny_run("cmi-bench/Lyra_dance", tiny_qwen, mirror, tmp_path, "--audio-dir",
                    f"cmi-bench/Lyra_dance={tmp_path / 'cmi'}")
    done = musiceval_cli(*args, env={**offline(mirror), "MUSICEVAL_URL_MIRROR": str(mirror["urls"]),
                                     "MUSICEVAL_CACHE": str(tmp_path / "cache"), "CI": ""})
    results = finished_run(done, out)
    text = json.dumps(results)
    assert "Lyra_dance" in text and "accuracy" in text
    assert results["meta"]["provenance"]["scorer"]["datasets"]["cmi-bench/Lyra_dance"]["revision"] == DEVELOPMENT_COMMIT
