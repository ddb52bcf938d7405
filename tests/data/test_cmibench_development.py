"""The CMI-Bench development branch's instruction files (nicolaus625/CMI-bench@35235cb) and answer
files of its nine tasks: read by the loader and by the catalogue's reader, hostile rows counted.

``fixtures/mir/instructions/development/`` holds rows of the stored files at 35235cb (the first
sections of the Arab-Andalusian files, the first Lyra rows of each split, SongFormBench's first
tracks; fixtures/README.md says which Lyra rows were rebuilt with ``sft_lyra.py``'s rule)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from musiceval.catalogue import get_benchmark
from musiceval.catalogue.cmibench import DEVELOPMENT_FILES
from musiceval.data.cmibench import load_instructions, load_outputs, task_from_filename

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mir" / "instructions" / "development"
TASKS = list(DEVELOPMENT_FILES)


@pytest.mark.parametrize("task", TASKS)
def test_every_fixture_row_reads_and_the_test_split_is_asked(task):
    path = FIXTURES / f"CMI_{task}.jsonl"
    rows, failures = load_instructions(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert not failures and len(rows) == len(lines)
    questions = get_benchmark(f"cmi-bench/{task}").questions({path.name: path})
    test_lines = [k for k, line in enumerate(lines) if "test" in json.loads(line)["split"]]
    assert [q.meta["line"] for q in questions] == test_lines and questions  # train rows are never asked
    for q in questions:
        row = json.loads(lines[q.meta["line"]])
        assert q.id == f"{q.meta['line']}|{row['audio_path'][0]}" and q.prompt == row["instruction"]
        assert q.reference == row["output"] and q.audio_start == row["audio_start"] and q.meta["task"] == task
        assert q.audio_end == row["audio_end"] > q.audio_start


def test_a_section_of_an_arab_andalusian_recording_is_its_window():
    path = FIXTURES / "CMI_ArabAndalusian_mizan.jsonl"
    q = get_benchmark("cmi-bench/ArabAndalusian_mizan").questions({path.name: path})[1]
    assert (q.audio_start, q.audio_end, q.reference) == (97.0, 316.0, "basīṭ")
    assert q.audio_key == ("data/arab_andalusian/documents/2d91d7e4-904a-46b7-bce2-230ca4e1b1c4/"
                           "2d91d7e4-904a-46b7-bce2-230ca4e1b1c4.mp3")


@pytest.mark.parametrize("name, task", [("qwen2_ArabAndalusian_form.jsonl", "ArabAndalusian_form"),
                                        ("my_model_Lyra_place.jsonl", "Lyra_place"), ("x_Lyra_dance.json", "Lyra_dance"),
                                        ("salmonn_SongFormBench.jsonl", "SongFormBench")])
def test_the_task_is_read_from_the_output_file_name(name, task):
    assert task_from_filename(name)[1] == task


def test_hostile_records_are_counted_failures_and_an_empty_place_is_an_item(tmp_path):
    records = [
        {"question": "q", "response": "Aegean-sea, Icaria", "correct_answer": "Aegean-sea, Icaria", "audioid": "data/lyra/audio/a.wav"},
        {"question": "q", "response": "none", "correct_answer": "", "audioid": "data/lyra/audio/b.wav"},  # no place: an item
        "not an object", 7, None,
        {"question": "q", "correct_answer": "Macedonia", "audioid": "c.wav"},                # no response
        {"question": "q", "response": ["Macedonia"], "correct_answer": None, "audioid": "d"},  # no reference
        {"question": "q", "response": {"a": 1}, "correct_answer": "Crete", "audioid": "e"},    # response not text
    ]
    path = tmp_path / "m_Lyra_place.jsonl"
    path.write_text(json.dumps(records), encoding="utf-8")
    out = load_outputs(path)
    assert [r.correct_answer for r in out.records] == ["Aegean-sea, Icaria", ""]
    assert len(out.failures) == 6 and out.n == len(records)
    reasons = [f.reason for f in out.failures]
    assert sum("not an object" in r for r in reasons) == 3 and sum("'response' missing" in r for r in reasons) == 2
    # an empty reference is nothing to score against for a single-label task
    path = tmp_path / "m_ArabAndalusian_form.jsonl"
    path.write_text(json.dumps([{"response": "inshād", "correct_answer": " ", "audioid": "x"},
                                {"response": "inshād", "correct_answer": "inshād", "audioid": "y"}]), encoding="utf-8")
    out = load_outputs(path)
    assert len(out.records) == 1 and "'correct_answer' is empty" in out.failures[0].reason


def test_hostile_instruction_lines_are_counted_failures(tmp_path):
    good = (FIXTURES / "CMI_SongFormBench.jsonl").read_text(encoding="utf-8").splitlines()[0]
    path = tmp_path / "CMI_SongFormBench.jsonl"
    path.write_bytes("\n".join([good, "{not json", "[1, 2]", json.dumps({"instruction": "x"}), good]).encode("utf-8")
                     + b"\n\xff\xfe broken\n")
    rows, failures = load_instructions(path)
    assert len(rows) == 2 and len(failures) == 4
    assert any("not valid UTF-8" in f.reason for f in failures) and any("'output' missing" in f.reason for f in failures)
