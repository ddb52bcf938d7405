"""NSynth note ids and the dasheng recorded-response loader (used for the NSynth fixture)."""
import json
from pathlib import Path

import pytest

from musiceval.data.dasheng import MAX_LINE_BYTES, load_dasheng_jsonl
from musiceval.catalogue.datasets.nsynth import FAMILIES, family_from_note_id, parse_note_id

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "factual" / "nsynth_midashenglm.jsonl"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "nsynth" / "dev_midashenglm.jsonl"


@pytest.mark.parametrize(
    "name,family",
    [("bass_synthetic_068-049-025", "bass"), ("keyboard_electronic_001-021-127.wav", "keyboard"),
     ("/data/nsynth-test/audio/synth_lead_synthetic_000-100-050.wav", "synth_lead"),
     ("..\\..\\audio\\vocal_acoustic_000-060-075.wav", "vocal")],
)
def test_family_from_note_id(name, family):
    assert family_from_note_id(name) == family


def test_note_id_fields():
    note = parse_note_id("guitar_acoustic_010-066-100.wav")
    assert (note.source, note.instrument, note.pitch, note.velocity) == ("acoustic", 10, 66, 100)


@pytest.mark.parametrize("bad", ["", "bass", "bass_synthetic_068-049", "drum_acoustic_000-060-075", "bass_analog_068-049-025", "../../etc/passwd"])
def test_bad_note_ids_raise_naming_the_input(bad):
    with pytest.raises(ValueError, match="NSynth"):
        parse_note_id(bad)


def test_fixture_labels_agree_with_note_ids():
    data = load_dasheng_jsonl(FIXTURE)
    assert len(data.items) == 300 and not data.failures
    for item in data.items:
        assert item.labels == (family_from_note_id(item.id),)
    assert {r.prompt for r in data.responses} == {"What's the music instrument?"}
    assert set(FAMILIES) >= {lab for it in data.items for lab in it.labels}


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/data not present (CI without shared data)")
def test_shared_file_loads_without_failures():
    data = load_dasheng_jsonl(SHARED)
    assert len(data.items) == 300 and not data.failures


def test_hostile_lines_are_counted_failures(tmp_path):
    good = {"audio": "bass_synthetic_068-049-025.wav", "label": ["bass"], "prompt": "p", "model_output": "bass"}
    lines = [
        json.dumps(good).encode(),
        b"{not json",
        b"\xff\xfe\x00garbage",
        json.dumps({"audio": "x.wav", "prompt": "p"}).encode(),  # no output, no label
        json.dumps({**good, "model_output": 3}).encode(),
        json.dumps([1, 2]).encode(),
        b"",
        json.dumps({**good, "model_output": "go " * (MAX_LINE_BYTES // 3 + 10)}).encode(),
        json.dumps(good).encode(),  # the same clip and prompt again: a second answer, counted as a failure
        json.dumps({**good, "prompt": "q"}).encode(),  # the same clip, another prompt: another item
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(b"\n".join(lines))
    data = load_dasheng_jsonl(path)
    assert [it.id for it in data.items] == ["bass_synthetic_068-049-025.wav", "bass_synthetic_068-049-025.wav#2"]
    assert [it.group for it in data.items] == ["bass_synthetic_068-049-025.wav"] * 2
    reasons = [f.reason for f in data.failures]
    assert len(reasons) == 7
    assert any("answers item 'bass_synthetic_068-049-025.wav' again (line 1 " in r for r in reasons)
    assert any("not UTF-8" in r for r in reasons) and any("missing field" in r for r in reasons)
    assert any("longer than" in r for r in reasons)
    assert all(f.item_id.startswith("hostile.jsonl:") for f in data.failures)


def test_empty_and_missing_files(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    assert load_dasheng_jsonl(tmp_path / "empty.jsonl").items == ()
    with pytest.raises(FileNotFoundError, match="not found"):
        load_dasheng_jsonl(tmp_path / "absent.jsonl")
