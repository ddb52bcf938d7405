"""Where the commands put what they write, and that they say so: ``mir-live``'s output files go to a
hidden ``.musiceval/mir-live/<model label>`` (never ``outputs/`` beside the user's files) and
``generate`` names its response cache on stderr."""
from __future__ import annotations

import json
from pathlib import Path

from musiceval import cli
from musiceval.models.base import Answer, register_model

ROOT = Path(__file__).resolve().parents[1]
AUDIO = ROOT / "musiceval" / "evals" / "audio"
MANIFEST = AUDIO / "manifest.jsonl"


class ConstantModel:
    spec, revision, sample_rate, max_audio_seconds, chunk_seconds = "const-mir:g", "1", 16_000, None, None

    def generate(self, requests, settings):
        return [Answer(text="G major") for _ in requests]

    def close(self):
        pass


@register_model("const-mir")
def _const(rest, **options):
    return ConstantModel()


def test_mir_live_writes_under_a_hidden_folder_by_default_and_says_where(tmp_path, monkeypatch, capsys):
    work = tmp_path / "checkout"
    work.mkdir()
    monkeypatch.chdir(work)
    argv = ["mir-live", "--model", "const-mir:g", "--instructions", str(AUDIO / "cmi_bench"), "--data-dir", str(AUDIO),
            "--tasks", "GS_key", "--cache-dir", str(tmp_path / "cache")]
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["task"] == "GS_key"
    out = Path(".musiceval") / "mir-live" / "const-mir-g"
    assert sorted(p.relative_to(work).as_posix() for p in work.rglob("*") if p.is_file()) == [
        (out / "const-mir-g_GS_key.jsonl").as_posix()]
    assert captured.err.strip().splitlines()[-1] == f"mir-live: 1 output file(s) in {out}"
    assert cli.main([*argv, "--out", str(tmp_path / "mine")]) == 0  # --out still wins
    assert (tmp_path / "mine" / "const-mir-g_GS_key.jsonl").is_file()
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"mir-live: 1 output file(s) in {tmp_path / 'mine'}"


def test_generate_names_its_response_cache_on_stderr(tmp_path, monkeypatch, capsys):
    rows = [json.loads(x) for x in MANIFEST.read_text().splitlines()]
    recorded = tmp_path / "rec.jsonl"
    recorded.write_text("".join(json.dumps({"item_id": r["id"], "prompt": r["question"], "text": "a guess"}) + "\n"
                                for r in rows))
    argv = ["generate", "--model", f"recorded:{recorded}", "--dataset", str(MANIFEST), "--no-progress"]
    monkeypatch.setenv("MUSICEVAL_CACHE", str(tmp_path / "default-cache"))
    assert cli.main(argv) == 0  # the default: $MUSICEVAL_CACHE (else the platform's cache folder)
    captured = capsys.readouterr()
    where = tmp_path / "default-cache" / "responses" / "responses.jsonl"
    assert captured.err.strip().splitlines()[-1] == (f"musiceval generate: responses cached in {where} "
                                                     f"(pytest --musiceval-cache-dir {tmp_path / 'default-cache'} replays them)")
    assert json.loads(captured.out)["cache"] == str(where) and where.is_file()
    assert cli.main([*argv, "--cache-dir", str(tmp_path / "mine")]) == 0
    assert f"responses cached in {tmp_path / 'mine' / 'responses' / 'responses.jsonl'}" in capsys.readouterr().err
