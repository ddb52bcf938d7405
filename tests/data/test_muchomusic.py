"""Loaders of MuChoMusic questions and recorded multiple-choice answers."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from musiceval.vocab.choice_prompts import ANSWER_TYPE, DISTRACTOR_TYPES, build_prompts, distractor_setting
from musiceval.data.muchomusic import (
    ChoiceDataError,
    load_choice_manifest,
    load_dasheng_jsonl,
    load_muchomusic_eval_json,
    load_musiceval_jsonl,
    parse_dimension_list,
)
from musiceval.data.muchomusic_csv import load_muchomusic_csv
from musiceval.protocols.choice.engine import choice_records

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "choice" / "dev_midashenglm.jsonl"
SHARED = REPO.parent / "shared" / "data" / "muchomusic" / "dev_midashenglm.jsonl"

# Column names of the official release (Zenodo 12709974 / HF mulab-mir/muchomusic), as read by
# MuChoMusic's load_questions_from_csv.
CSV_COLUMNS = ["question", "correct_answer", "distractor_1_answer", "distractor_2_answer", "distractor_3_answer",
               "genre", "music_knowledge", "music_reasoning", "num_annotations", "odd_question", "dataset",
               "dataset_identifier"]


def _csv_row(question="What rhythm do the drums play?", answers=("Four on the floor", "Off-beat syncopation",
             "Scat singing", "E-guitar melody"), knowledge="['metre and rhythm']", reasoning="",
             dataset="sdd", identifier="415600.json"):
    return [question, *answers, "Reggae", knowledge, reasoning, "3", "False", dataset, identifier]


def _write_csv(path: Path, rows, columns=CSV_COLUMNS) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(rows)
    return path


def test_official_csv_layout_loads_items_in_canonical_order(tmp_path):
    path = _write_csv(tmp_path / "muchomusic.csv", [
        _csv_row(),
        _csv_row(question="Which mood,\nacross two lines?", answers=("Calm", "Tense", "Loud drums", "Lyrics in Spanish"),
                 knowledge="", reasoning="['mood and expression', 'genre and style']",
                 dataset="musiccaps", identifier="-0Gj8-vB1q4_30_2.json"),
    ])
    items, failures = load_muchomusic_csv(path)
    assert failures == []
    first, second = items
    assert first.id == "0" and first.answer == "A"
    assert first.choices == ("Four on the floor", "Off-beat syncopation", "Scat singing", "E-guitar melody")
    assert first.meta["distractor_types"] == (ANSWER_TYPE, *DISTRACTOR_TYPES)
    assert first.meta["knowledge"] == ("metre and rhythm",) and first.meta["reasoning"] == ()
    assert first.meta["dataset"] == "sdd" and first.meta["audio_id"] == "415600" and first.group == "sdd:415600"
    assert first.meta["genre"] == "Reggae" and first.meta["num_annotations"] == "3"
    assert second.question == "Which mood,\nacross two lines?"
    assert second.meta["reasoning"] == ("mood and expression", "genre and style")
    assert second.meta["audio_id"] == "-0Gj8-vB1q4_30"  # upstream drops the last "_" part
    assert distractor_setting(first) == "all"


def test_csv_bad_rows_are_counted_failures(tmp_path):
    path = _write_csv(tmp_path / "muchomusic.csv", [
        _csv_row(),
        _csv_row(answers=("Calm", "Tense", "calm", "Loud")),
        _csv_row(answers=("Calm", "", "Sad", "Loud")),
        _csv_row(knowledge="['melody'"),
        _csv_row(question=""),
        _csv_row() + ["surplus"],
    ])
    items, failures = load_muchomusic_csv(path)
    assert [i.id for i in items] == ["0"]
    reasons = {f.item_id: f.reason for f in failures}
    assert "duplicate choice 'Calm'" in reasons["1"]
    assert "choice B must be a non-empty string" in reasons["2"]
    assert "music_knowledge" in reasons["3"] and "list literal" in reasons["3"]
    assert "empty 'question'" in reasons["4"]
    assert "more field(s) than the header" in reasons["5"]


def test_csv_file_level_errors_name_the_fix(tmp_path):
    with pytest.raises(ChoiceDataError, match="zenodo.org/record/12709974"):
        load_muchomusic_csv(tmp_path / "absent.csv")
    with pytest.raises(ChoiceDataError, match="missing column.*distractor_3_answer"):
        load_muchomusic_csv(_write_csv(tmp_path / "cols.csv", [["q", "a", "b", "c"]], CSV_COLUMNS[:4]))
    with pytest.raises(ChoiceDataError, match="unreadable CSV"):
        load_muchomusic_csv(_write_csv(tmp_path / "huge.csv", [_csv_row(question="x" * 1_000_000)]))
    bad = tmp_path / "latin1.csv"
    bad.write_bytes(",".join(CSV_COLUMNS).encode() + b"\nCaf\xe9,a,b,c,d,,,,,,,\n")
    with pytest.raises(ChoiceDataError, match="not UTF-8"):
        load_muchomusic_csv(bad)


def test_parse_dimension_list():
    assert parse_dimension_list("['melody', 'harmony']", field_name="k") == ("melody", "harmony")
    assert parse_dimension_list('["lyrics"]', field_name="k") == ("lyrics",)
    assert parse_dimension_list(float("nan"), field_name="k") == ()
    assert parse_dimension_list("", field_name="k") == ()
    assert parse_dimension_list(["structure"], field_name="k") == ("structure",)
    with pytest.raises(ValueError, match="expected a list of strings"):
        parse_dimension_list("{'a': 1}", field_name="k")
    with pytest.raises(ValueError, match="not a list literal"):  # never evaluated
        parse_dimension_list("__import__('os')", field_name="k")


# --------------------------------------------------------------------------- dasheng layout

def test_dasheng_fixture_slice_loads_completely():
    loaded = choice_records(load_dasheng_jsonl(FIXTURE))
    assert len(loaded.records) == 200 and loaded.failures == []
    first = loaded.records[0]
    assert first.item.id == "test_0" and first.item.answer == "A"
    assert first.item.choices == ("Reggae", "Pop music", "Latin rock", "Ska")
    assert first.response.text == "A" and first.response.model == "MiDashengLM"
    assert first.response.prompt.endswith("Answer with a single Letter: ")


@pytest.mark.skipif(not SHARED.is_file(), reason="../shared/data/muchomusic not present (CI without shared data)")
def test_dasheng_shared_file_loads_completely():
    loaded = choice_records(load_dasheng_jsonl(SHARED))
    assert len(loaded.records) == 200 and loaded.failures == []


def _dasheng(i, **overrides):
    row = {"audio": f"test_{i}.wav", "question": "Which genre?", "choices": ["Reggae", "Pop", "Latin rock", "Ska"],
           "answer": "A", "prompt": "Which genre?\n(A) Reggae ...", "model_output": "A", "model_name": "M"}
    row.update(overrides)
    return json.dumps(row)


def test_dasheng_bad_records_are_counted_with_reasons(tmp_path):
    lines = [
        _dasheng(0),
        _dasheng(1, choices=["Reggae", "Pop", "Ska"]),
        _dasheng(2, choices=["Reggae", "Pop", "Latin rock", "Ska", "Jazz"]),
        _dasheng(3, answer=None),
        _dasheng(4, choices=["Reggae", "Pop", "Reggae", "Ska"]),
        _dasheng(5, answer="E"),
        _dasheng(6, answer=2),
        '{"audio": "test_7.wav", "question": ',
        "[1, 2]",
        json.dumps({"audio": "test_9.wav", "question": "q", "choices": ["a", "b", "c", "d"], "answer": "B"}),
        _dasheng(10, model_output=None),
        _dasheng(0),
        _dasheng(12, model_output="go " * 400_000),
        "",
        _dasheng(14, model_output=["A"]),
        "[" * 200_000,
    ]
    path = tmp_path / "dasheng.jsonl"
    path.write_bytes("\n".join(lines).encode() + b"\n" + _dasheng(15).encode().replace(b"Reggae", b"Regg\xe6") + b"\n")
    loaded = choice_records(load_dasheng_jsonl(path))
    assert [r.item.id for r in loaded.records] == ["test_0", "test_10", "test_12"]
    assert loaded.records[1].response.text == ""  # null output: scored as unanswered, not dropped
    reasons = {f.item_id: f.reason for f in loaded.failures}
    assert len(loaded.failures) == 13
    assert "expected exactly 4 choices, got 3" in reasons["test_1"]
    assert "expected exactly 4 choices, got 5" in reasons["test_2"]
    assert "missing answer letter" in reasons["test_3"]
    assert "duplicate choice 'Reggae'" in reasons["test_4"]
    assert "answer letter 'E' is not one of the choices" in reasons["test_5"]
    assert "answer must be a letter" in reasons["test_6"]
    assert "malformed JSON" in reasons["dasheng.jsonl:8"]
    assert "expected a JSON object, got list" in reasons["dasheng.jsonl:9"]
    assert "missing field 'model_output'" in reasons["test_9"]
    assert "duplicate record for item 'test_0'" in reasons["test_0"]
    assert "must be a string" in reasons["test_14"]
    assert "nested too deeply" in reasons["dasheng.jsonl:16"]
    assert "not valid UTF-8" in reasons["dasheng.jsonl:17"]


def test_missing_recorded_file_is_a_file_level_error(tmp_path):
    with pytest.raises(ChoiceDataError, match="file not found"):
        load_dasheng_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(ChoiceDataError, match="file not found"):
        load_muchomusic_eval_json(tmp_path / "nope.json")


# --------------------------------------------------------------------------- musiceval layout

def test_musiceval_layout_round_trips_prompt_records(tmp_path):
    items, _ = load_muchomusic_csv(_write_csv(tmp_path / "m.csv", [
        _csv_row(), _csv_row(answers=("Calm", "Tense", "Loud drums", "Spanish lyrics"), dataset="sdd", identifier="1.json"),
    ]))
    prompts = build_prompts(items, runs=2, n_examples=1, seed=3)
    ablated = build_prompts(items, runs=1, n_examples=0, distractors=("correct_but_unrelated",), seed=3)
    by_id = {item.id: item for item in items}
    rows = [p.to_record(by_id[p.item_id], "(B)", model="m") for p in prompts + ablated]
    path = tmp_path / "responses.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    loaded = choice_records(load_musiceval_jsonl(path))
    assert loaded.failures == [] and len(loaded.records) == 6
    for prompt, record in zip(prompts + ablated, loaded.records):
        assert record.item.choices == prompt.choices and record.item.answer == prompt.answer
        assert record.run == prompt.run and record.response.text == "(B)"
        assert record.item.meta["knowledge"] == ("metre and rhythm",)
    assert {distractor_setting(r.item) for r in loaded.records} == {"all", "correct_but_unrelated"}


def test_musiceval_layout_bad_records(tmp_path):
    good = {"item_id": "q1", "question": "Which?", "choices": ["a", "b", "c", "d"], "answer": "C", "text": "C"}
    rows = [
        good,
        {**good, "item_id": "q2", "choices": ["a", "b"]},  # fewer than four without declared ablation
        {**good, "item_id": "q3", "choices": ["a", "b"], "answer": "A",
         "distractor_types": ["answer", "incorrect_but_related"]},  # a declared ablation is fine
        {**good, "item_id": "q4", "distractor_types": ["answer", "x", "y", "z"]},
        {**good, "item_id": "q5", "run": -1},
        {**good, "item_id": "q6", "knowledge": "melody"},
        {**good, "item_id": "q7", "text": None, "condition": "noise"},
        {"item_id": "q8", "question": "Which?", "choices": ["a", "b", "c", "d"], "answer": "A", "response": "A"},
        {**good, "item_id": "q9", "answer": "A", "distractor_types": list(DISTRACTOR_TYPES) + ["answer"]},
    ]
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    loaded = choice_records(load_musiceval_jsonl(path))
    assert [r.item.id for r in loaded.records] == ["q1", "q3", "q7", "q8"]
    assert loaded.records[2].response.condition == "noise" and loaded.records[2].response.text == ""
    assert loaded.records[3].response.text == "A"
    reasons = {f.item_id: f.reason for f in loaded.failures}
    assert "expected exactly 4 choices, got 2" in reasons["q2"]
    assert "distractor_types" in reasons["q4"]
    assert "'run' must be a non-negative integer" in reasons["q5"]
    assert "'knowledge'" in reasons["q6"]
    assert "correct choice must be typed 'answer'" in reasons["q9"]


def test_choice_manifest_for_live_runs(tmp_path):
    rows = [
        {"id": "q1", "question": "Which?", "choices": ["a", "b", "c", "d"], "answer": "B", "audio": "clips/1.wav",
         "knowledge": ["melody"], "audio_start": 0, "audio_end": 10},
        {"id": "q1", "question": "Which?", "choices": ["a", "b", "c", "d"], "answer": "B", "audio": "clips/1.wav"},
        {"id": "q2", "question": "Which?", "choices": ["a", "b", "c", "d"], "answer": "B", "audio": 5},
    ]
    path = tmp_path / "manifest.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    items, failures = load_choice_manifest(path)
    assert [i.id for i in items] == ["q1"] and items[0].meta["audio_end"] == 10.0
    assert [f.item_id for f in failures] == ["q1", "q2"]
    assert "duplicate id" in failures[0].reason and "path string" in failures[1].reason


# --------------------------------------------------------------------------- official evaluation JSON

def _official(i, orders, **overrides):
    canonical = ["Pop music", "Reggae", "Latin rock", "Ska"]
    row = {"id": 415600, "prompt": "Question: Which genre?\n Options: ... \n The correct answer is: ",
           "answers": [canonical[j] for j in orders], "answer_orders": orders, "dataset": "sdd", "genre": "Reggae",
           "reasoning": ["genre and style"], "knowledge": [], "audio_path": "data/sdd/audio/00/415600.2min.mp3",
           "model_output": "A"}
    row.update(overrides)
    return row


def test_official_evaluation_json(tmp_path):
    rows = [
        _official(0, [3, 0, 2, 1]),
        _official(1, [0, 1, 2, 3], id="abc"),
        _official(2, [0, 1, 1, 3]),
        _official(3, [1, 0], answers=["Reggae", "Pop music"], distractors=["incorrect_but_related"]),
        _official(4, [1, 0], answers=["Reggae", "Pop music"]),
        "not an object",
        _official(6, [3, 0, 2, 1], answer_orders=["0", 1, 2, 3]),
        _official(7, [], answers=[]),
        _official(8, [1, 0], answers=["Reggae", "Pop music"], distractors=5),
    ]
    path = tmp_path / "example_file.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    loaded = choice_records(load_muchomusic_eval_json(path))
    assert [r.item.id for r in loaded.records] == ["q0", "q1", "q3"]
    first = loaded.records[0].item
    assert first.answer == "B" and first.choices[1] == "Pop music"  # answer_orders.index(0) == 1
    assert first.group == "415600" and first.meta["reasoning"] == ("genre and style",)
    assert first.meta["distractor_types"] == ("incorrect_and_unrelated", "answer", "correct_but_unrelated",
                                             "incorrect_but_related")
    assert distractor_setting(loaded.records[2].item) == "incorrect_but_related"
    reasons = {f.item_id: f.reason for f in loaded.failures}
    assert "not a permutation" in reasons["q2"]
    assert "expected exactly 4 choices, got 2" in reasons["q4"]
    assert "expected a JSON object" in reasons["example_file.json[5]"]
    assert "not a permutation" in reasons["q6"] and "not a permutation" in reasons["q7"]
    assert "'distractors' must be a list" in reasons["q8"]
    jsonl = tmp_path / "example_file.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows[:2]), encoding="utf-8")
    assert len(load_muchomusic_eval_json(jsonl).responses) == 2
    with pytest.raises(ChoiceDataError, match="muchomusic.csv holds questions only"):
        load_muchomusic_eval_json(_write_csv(tmp_path / "muchomusic.csv", [_csv_row()]))
    broken = tmp_path / "broken.json"
    for text in ("[{", "[" * 200_000):
        broken.write_text(text, encoding="utf-8")
        with pytest.raises(ChoiceDataError, match="not a valid UTF-8 JSON array"):
            load_muchomusic_eval_json(broken)


# --------------------------------------------------------------------------- hostile records (property)

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=10,
)
FIELDS = ["item_id", "id", "question", "choices", "answer", "text", "response", "model_output", "audio", "run",
          "condition", "knowledge", "reasoning", "distractor_types", "permutation", "audio_start", "answers",
          "answer_orders", "distractors", "group", "prompt"]
HOSTILE_RECORDS = st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES | st.just(["a", "b", "c", "d"]), max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(HOSTILE_RECORDS, min_size=1, max_size=4))
def test_loaders_never_crash_on_hostile_records(tmp_path, records):
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    for load in (load_dasheng_jsonl, load_musiceval_jsonl, load_muchomusic_eval_json):
        answers = load(path)
        assert len(answers.responses) + len(answers.failures) == len(records)  # nothing dropped silently
        assert len(answers.items) == len(answers.responses) and len(choice_records(answers).records) == len(answers.responses)
    items, failures = load_choice_manifest(path)
    assert len(items) + len(failures) == len(records)
