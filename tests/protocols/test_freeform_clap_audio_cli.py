"""``musiceval score freeform --metrics clap_audio --data-dir DIR`` end to end through the CLI, on the
tiny random CLAP of ``tests/encoders/tiny_clap.py`` and the synthesised clips of ``musiceval/evals/audio``."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from musiceval import cli  # noqa: E402
from tests.encoders.tiny_clap import build_tiny_clap  # noqa: E402

AUDIO = Path(__file__).resolve().parents[2] / "musiceval" / "evals" / "audio"
CLIPS = ("instrument_piano", "instrument_flute", "key_g_major")


@pytest.fixture(scope="module")
def tiny_clap(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_clap")
    build_tiny_clap(path)
    return path


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _rows(audio_of):
    return [{"id": c, "question": "Describe this music.", "reference": f"{c} clip", "audio": audio_of(c),
             "response": f"a {c.split('_')[-1]} piece"} for c in CLIPS]


def test_clap_audio_from_the_command_line_with_a_data_dir(tiny_clap, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data = tmp_path / "clips"
    data.mkdir()
    for c in CLIPS:
        shutil.copy(AUDIO / f"{c}.flac", data / f"{c}.flac")
    rows = _rows(lambda c: f"{c}.flac") + [
        {"id": "escape", "question": "Describe this music.", "reference": "x", "audio": "../answers.jsonl", "response": "a"},
        {"id": "silent", "question": "Describe this music.", "reference": "x", "response": "a"},
    ]
    answers = _write(tmp_path / "answers.jsonl", rows)
    per_item = tmp_path / "items.jsonl"
    argv = ["score", "freeform", "--format", "musiceval", str(answers), "--metrics", "clap_audio",
            "--conditions", "correct,random", "--clap", str(tiny_clap), "--data-dir", str(data), "--json",
            "--per-item", str(per_item)]
    assert cli.main(argv) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["protocol"] == "freeform" and js["n"] == 5 and js["n_failed"] == 2
    assert -1.0 <= js["metrics"]["clap_audio"] <= 1.0
    assert js["conditions"]["random"]["clap_audio"] is not None
    failures = {r["item_id"]: r["error"] for r in map(json.loads, per_item.read_text().splitlines()) if "error" in r}
    assert "'..'" in failures["escape"] and "no 'audio' field" in failures["silent"]
    # without --data-dir the answers file's folder is the audio root
    _write(data / "answers.jsonl", _rows(lambda c: f"{c}.flac"))
    assert cli.main(argv[:4] + [str(data / "answers.jsonl")] + argv[5:11] + ["--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["n_failed"] == 0 and again["metrics"]["clap_audio"] == pytest.approx(
        js["metrics"]["clap_audio"], abs=1e-6)  # the same three clips and answers


def test_clap_audio_input_errors_exit_2_naming_the_fix(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MUSICEVAL_CLAP", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    answers = _write(tmp_path / "answers.jsonl", _rows(lambda c: f"{c}.flac"))
    base = ["score", "freeform", "--format", "musiceval", str(answers), "--metrics", "clap_audio", "--conditions", "correct"]
    assert cli.main(base + ["--clap", str(tmp_path / "absent")]) == 2
    assert "huggingface-cli download laion/larger_clap_music" in capsys.readouterr().err
    assert cli.main(base + ["--data-dir", str(tmp_path / "nowhere")]) == 2
    assert "--data-dir" in capsys.readouterr().err
