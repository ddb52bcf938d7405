"""``musiceval data prepare`` / ``check`` on a local mirror in the real layouts: counts, the lock
file, resumption, and one line naming the fix for a missing clip, a corrupt clip, a changed
question file, an unknown benchmark and an offline hub miss."""
from __future__ import annotations

import json

import pytest

from musiceval.catalogue import get_benchmark
from musiceval.catalogue.check import check
from musiceval.catalogue.fetch import FetchError
from musiceval.catalogue.lock import LOCK_NAME, read_lock
from musiceval.catalogue.prepare import PrepareError, ensure_prepared, prepare
from musiceval.cli import main


def test_nsynth_from_the_release_archive_counts_missing_and_corrupt_clips(nsynth_mirror):
    report = prepare(get_benchmark("nsynth"), nsynth_mirror["data"], progress=False, log=lambda _: None)
    lock = report.lock
    assert (lock.questions, lock.with_audio, lock.items) == (6, 4, 4096)
    assert list(lock.missing) == ["brass_acoustic_006-050-075"]
    assert list(lock.corrupt) == ["flute_acoustic_002-077-100"] and "cannot be decoded" in lock.corrupt["flute_acoustic_002-077-100"]
    assert report.summary() == "nsynth: 4 of 4,096 items with audio (1 missing, 1 corrupt; 6 questions in the file)"
    clip = lock.clips[lock.item_clips["bass_synthetic_068-049-025"]]
    assert clip["sample_rate"] == 16000 and clip["duration_s"] == 1.0 and len(clip["sha256"]) == 64
    rows = [json.loads(line) for line in report.manifest.read_text().splitlines()]
    assert [r["id"] for r in rows] == sorted(lock.item_clips) and rows[0]["labels"] == ["bass"]
    assert lock.question_files.keys() == {"nsynth-test/examples.json"}
    assert check(get_benchmark("nsynth"), report.directory) == []


def test_a_second_prepare_reuses_every_checked_clip(nsynth_mirror, monkeypatch):
    bench = get_benchmark("nsynth")
    first = prepare(bench, nsynth_mirror["data"], progress=False, log=lambda _: None)
    import musiceval.catalogue.prepare as prep

    def no_decode(path):
        raise AssertionError(f"{path} decoded again")

    monkeypatch.setattr(prep, "inspect_clip", no_decode)
    again = prepare(bench, nsynth_mirror["data"], progress=False, log=lambda _: None)
    assert again.lock.clips == first.lock.clips
    assert ensure_prepared(bench, nsynth_mirror["data"], progress=False).reused


def test_check_names_each_problem_and_its_fix(nsynth_mirror):
    bench = get_benchmark("nsynth")
    report = prepare(bench, nsynth_mirror["data"], progress=False, log=lambda _: None)
    audio = report.audio_root
    (audio / "guitar_acoustic_010-066-100.wav").unlink()
    (audio / "reed_acoustic_037-068-127.wav").write_bytes(b"corrupt")
    examples = report.directory / "unpacked" / "nsynth-test" / "examples.json"
    examples.write_text(examples.read_text().replace("keyboard", "keyboard "), encoding="utf-8")
    problems = check(bench, report.directory)
    assert len(problems) == 3
    changed, gone, corrupt = problems[0], next(p for p in problems if "missing" in p), next(p for p in problems if "changed since" in p)
    assert changed.startswith("nsynth: question file nsynth-test/examples.json changed") and "`musiceval data prepare nsynth`" in changed
    assert "guitar_acoustic_010-066-100.wav is missing; restore it, or run `musiceval data prepare nsynth`" in gone
    assert "reed_acoustic_037-068-127.wav changed since it was checked" in corrupt


def test_the_cli_prints_counts_problems_and_the_generate_command(nsynth_mirror, capsys):
    root = nsynth_mirror["data"]
    assert main(["data", "prepare", "nsynth", "--data-root", str(root), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "nsynth: 4 of 4,096 items with audio (1 missing, 1 corrupt" in out
    assert "  missing brass_acoustic_006-050-075: no clip for 'brass_acoustic_006-050-075'" in out
    assert "musiceval generate --model MODEL_SPEC --dataset" in out
    (root / "nsynth" / "audio" / "bass_synthetic_068-049-025.wav").unlink()
    assert main(["data", "check", "nsynth", "--data-root", str(root), "--no-progress"]) == 1
    assert "bass_synthetic_068-049-025.wav is missing" in capsys.readouterr().out
    assert main(["data", "prepare", "nsyth", "--data-root", str(root)]) == 2
    assert capsys.readouterr().err.strip() == ("musiceval: error: unknown benchmark 'nsyth'; did you mean 'nsynth'? "
                                               "run `musiceval data list` for the catalogue")


def test_hummusqa_from_the_hub_cache_offline(hummusqa_mirror):
    report = prepare(get_benchmark("hummusqa"), hummusqa_mirror["data"], progress=False, log=lambda _: None)
    assert (report.lock.with_audio, report.lock.items) == (4, 320)
    assert report.lock.source["resolved_revision"] == get_benchmark("hummusqa").source.revision
    assert any("holds 4 items, the catalogue 320" in w for w in report.warnings)


def test_an_offline_hub_miss_names_the_variable_the_user_set_and_the_download_command(mirror):
    with pytest.raises(FetchError) as info:
        prepare(get_benchmark("hummusqa"), mirror["data"], progress=False, log=lambda _: None)
    message = str(info.value)
    assert "\n" not in message and "HF_HUB_OFFLINE=1 is set in the environment" in message
    assert "hf download --repo-type dataset mtg-upf/HumMusQA --revision ca7bad071bde0b27e55eca050f2e88b49ae01f56" in message
    assert f"local Hugging Face cache {mirror['hub']}" in message and "HF_HUB_CACHE=DIR" in message


def test_a_benchmark_without_audio_asks_for_the_folder(mirror, tmp_path):
    (tmp_path / "RUL-MuchoMusic.json").write_text(json.dumps({"7": {"question": "q?", "caption": "", "correct_answer": "a",
                                                                  "distractors": ["b", "c", "d", "e"], "PI": 0.5}}))
    bench = get_benchmark("rul-muchomusic")
    with pytest.raises(PrepareError, match=r"rul-muchomusic ships no audio .*; pass --audio-dir DIR"):
        prepare(bench, mirror["data"], questions=tmp_path / "RUL-MuchoMusic.json", progress=False, log=lambda _: None)
    from tests.catalogue.mirror import tone

    tone(tmp_path / "clips" / "7.mp3", fmt="MP3") if False else tone(tmp_path / "clips" / "7.wav")
    report = prepare(bench, mirror["data"], questions=tmp_path / "RUL-MuchoMusic.json", audio_dir=tmp_path / "clips",
                     progress=False, log=lambda _: None)
    assert report.lock.with_audio == 4 and read_lock(report.directory / LOCK_NAME).items == 4
