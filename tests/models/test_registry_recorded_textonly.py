"""The adapter registry, the recorded adapter on real layouts, and the text-only wrapper."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from musiceval.models import Answer, GenerationSettings, ModelSpecError, Request, load_model, register_model
from musiceval.models.recorded import read_recorded

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
S = GenerationSettings()


@register_model("test-echo")
class EchoModel:
    """Answers with what it was given, so a test sees what reached the model."""

    sample_rate, max_audio_seconds, chunk_seconds = 16_000, None, None

    def __init__(self, rest, **options):
        self.spec, self.revision, self.options = f"test-echo:{rest}", "v1", options

    def generate(self, requests, settings):
        return [Answer(text=f"{r.prompt}|{'none' if r.audio is None else f'{len(r.audio)}:{float(np.abs(r.audio).sum()):.1f}'}")
                for r in requests]

    def close(self):
        pass


def test_a_user_adapter_is_one_decorator_away():
    model = load_model("test-echo:anything", concurrency=3)
    assert model.spec == "test-echo:anything" and model.options == {"concurrency": 3}
    assert model.generate([Request("i", "hi", None)], S)[0].text == "hi|none"


def test_an_unknown_prefix_lists_the_known_ones():
    with pytest.raises(ModelSpecError, match="openai-compatible") as info:
        load_model("nope:x")
    assert "register_model" in str(info.value)


@pytest.mark.parametrize("bad", [dict(temperature=-1), dict(max_tokens=0)])
def test_generation_settings_are_validated(bad):
    with pytest.raises(ValueError):
        GenerationSettings(**bad)


def test_text_only_removes_the_audio_and_text_only_silence_zeroes_it():
    loud = Request("i", "q", np.ones(100, np.float32))
    assert load_model("text-only:test-echo:x").generate([loud], S)[0].text == "q|none"
    assert load_model("text-only-silence:test-echo:x").generate([loud], S)[0].text == "q|100:0.0"
    assert load_model("text-only:test-echo:x").spec == "text-only:test-echo:x"
    with pytest.raises(ModelSpecError, match="inner model"):
        load_model("text-only:")


def write_lines(path: Path, rows) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_recorded_musiceval_layout_matches_id_condition_and_prompt(tmp_path):
    f = write_lines(tmp_path / "r.jsonl", [
        {"item_id": "a", "condition": "correct", "prompt": "Describe  the music", "text": "calm piano"},
        {"item_id": "a", "condition": "noise", "prompt": "Describe the music", "text": "static"},
        "{not json",
        {"something": "else"},
    ])
    model = load_model(f"recorded:{f}")
    assert len(model.problems) == 2 and all(str(f) in p for p in model.problems)
    got = model.generate([Request("a", "Describe the music", None), Request("a", "Describe the music", None, "noise"),
                          Request("a", "Other question", None), Request("zzz", "Describe the music", None)], S)
    assert [a.text for a in got[:2]] == ["calm piano", "static"]
    assert "none for this prompt" in got[2].error and "no recorded response for item 'zzz'" in got[3].error


def test_recorded_dasheng_and_cmibench_layouts(tmp_path):
    dasheng = write_lines(tmp_path / "d.jsonl", [{"audio": "bass_1.wav", "label": ["bass"], "prompt": "What's the music instrument?", "model_output": "bass"}])
    cmi = tmp_path / "c.jsonl"
    cmi.write_text(json.dumps([{"question": "Q?", "response": "C major", "correct_answer": "C major",
                                "audioid": "../testdata/GS/k.wav", "other": ""}], indent=4))
    assert load_model(f"recorded:{dasheng}").generate([Request("bass_1", "What's the music instrument?", None)], S)[0].text == "bass"
    assert load_model(f"recorded:{cmi}").generate([Request("k.wav", "Q?", None)], S)[0].text == "C major"


def test_recorded_needs_an_existing_file():
    with pytest.raises(ModelSpecError, match="recorded:<"):
        load_model("recorded")
    with pytest.raises(ModelSpecError, match="not found"):
        load_model("recorded:/nonexistent/file.jsonl")


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data not present")
@pytest.mark.parametrize("rel", ["nsynth/dev_midashenglm.jsonl", "muchomusic/dev_midashenglm.jsonl",
                                 "musicqa/dev_midashenglm.jsonl", "cmi-bench/outputs/mullama/mullama_GS_key.jsonl",
                                 "cmi-bench/outputs/ltu/ltu_DSing.jsonl"])
def test_every_real_recorded_file_reads_without_problems(rel):
    rows, problems = read_recorded(SHARED / rel)
    assert rows and not problems


def test_recorded_dasheng_answers_each_question_about_one_clip_separately(tmp_path):
    rows = [{"audio": "clip.wav", "prompt": "Describe the audio", "model_output": "calm"},
            {"audio": "clip.wav", "prompt": "What instrument?", "model_output": "flute"}]
    model = load_model(f"recorded:{write_lines(tmp_path / 'd.jsonl', rows)}")
    answers = model.generate([Request("clip.wav", r["prompt"], None) for r in reversed(rows)], S)
    assert [a.text for a in answers] == ["flute", "calm"]
