"""Input handling (docs/hardening.md), one behaviour per test: per-line failures naming file:line, or exit 2
with one line."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
import soundfile as sf

from musiceval import results
from musiceval.cli import main
from musiceval.data.jsonl import NotARegularFile, read_json_objects
from musiceval.generate import load_manifest


def _err_lines(capsys):
    err = capsys.readouterr().err
    return [line for line in err.splitlines() if line.strip()]


def test_a_5000_digit_integer_fails_its_line_not_the_file(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"x": 1}\n{"x": ' + b"9" * 5000 + b'}\n{"x": 2}\n')
    rows = list(read_json_objects(path))
    assert [r[1]["x"] for r in rows if isinstance(r[1], dict)] == [1, 2]
    assert rows[1][1].item_id == "a.jsonl:2" and "digits" in rows[1][1].reason


def test_a_bom_is_accepted_and_a_fifo_is_refused_without_opening_it(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"x": 1}\r\n{"x": 2}\n')
    assert [obj for _, obj in read_json_objects(path)] == [{"x": 1}, {"x": 2}]
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(NotARegularFile, match="FIFO"):
        list(read_json_objects(fifo))
    with pytest.raises(NotARegularFile, match="directory"):
        list(read_json_objects(tmp_path))


def test_manifest_lone_surrogate_and_non_utf8_are_failures_naming_file_and_line(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"id": "a", "question": "ok?"}\n{"id": "b", "question": "bad \\ud800"}\n'
                     b'{"id": "c", "question": "caf\xe9"}\n\xef\xbb\xbf\n')
    items, failures = load_manifest(path)
    assert [i.id for i in items] == ["a"]
    reasons = [f.reason for f in failures]
    assert reasons[0].startswith("m.jsonl:2:") and "surrogate" in reasons[0]
    assert reasons[1].startswith("m.jsonl:3:") and "UTF-8" in reasons[1]


def test_generate_exits_2_on_an_empty_manifest(tmp_path, capsys):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n  \n")
    code = main(["generate", "--model", "recorded:" + str(path), "--dataset", str(path), "--cache-dir", str(tmp_path / "c")])
    lines = _err_lines(capsys)
    assert code == 2 and len(lines) == 1 and "no records" in lines[0]


def test_unwritable_outputs_are_one_line_exit_2(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    data = tmp_path / "in.jsonl"
    rec = {"question": "Describe", "answer": "a calm piano piece", "audio": "a.wav", "model_output": "calm piano"}
    data.write_text(json.dumps(rec) + "\n")
    code = main(["score", "freeform", str(data), "--format", "dasheng", "--metrics", "bleu", "--conditions", "correct",
                 "--per-item", str(blocker / "sub" / "per_item.jsonl")])
    lines = _err_lines(capsys)
    assert code == 2 and len(lines) == 1 and "a-file" in lines[0]
    sf.write(tmp_path / "a.wav", np.zeros(160, np.float32), 16000)
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"id": "x", "question": "q", "audio": "a.wav"}) + "\n")
    code = main(["generate", "--model", "recorded:" + str(manifest), "--dataset", str(manifest),
                 "--cache-dir", str(blocker / "cache"), "--no-progress"])
    lines = _err_lines(capsys)
    assert code == 2 and len(lines) == 1 and "--cache-dir" in lines[0]


@pytest.mark.parametrize("content, match, file_level", [
    ("{", "results.json: not valid JSON", True),
    ("[]", "expected a JSON object", True),
    ('{"gates": []}', "field 'meta' is missing", False),
    ('{"meta": {}, "gates": {}}', "field 'gates' must be an array", True),
    ('{"meta": {}, "gates": [{"name": 1, "outcome": "PASS"}]}', r"gates\[0\]\.name must be a string", False),
    ('{"meta": {}, "gates": [{"name": "g", "outcome": "PASS", "p_value": "x"}]}', r"gates\[0\]\.p_value", False),
    ("[" * 50000, "nested too deeply", True),
])
def test_results_load_and_report_name_the_file_and_the_field(tmp_path, capsys, content, match, file_level):
    """``results.load`` (a library call) refuses any malformed field; ``musiceval report`` refuses an
    unusable file (exit 2, one line) and renders the rest, counting and listing each bad row."""
    (tmp_path / "results.json").write_text(content)
    with pytest.raises(results.ResultsError, match=match) as info:
        results.load(tmp_path)
    assert "results.json" in str(info.value)
    code = main(["report", str(tmp_path)])
    if file_level:
        lines = _err_lines(capsys)
        assert code == 2 and len(lines) == 1 and "results.json" in lines[0]
    else:
        assert code == 0 and (tmp_path / "report.html").is_file()


def test_results_load_names_the_scores_line_and_field(tmp_path):
    (tmp_path / "results.json").write_text('{"meta": {}, "gates": []}')
    good = {"metric": "acc", "condition": "correct", "ids": ["a"], "values": [1.0]}
    (tmp_path / "scores.jsonl").write_text(json.dumps(good) + "\n" + json.dumps({**good, "ids": ["a", "b"]}) + "\n")
    with pytest.raises(results.ResultsError, match=r"scores.jsonl:2: fields 'ids' and 'values'"):
        results.load(tmp_path)


# -- no traceback, one line naming the input and the fix ---------------------------------
GTZAN = "fixtures/factual/ltu_GTZAN.jsonl"


def _refused(argv, capsys) -> str:
    """Exit 2 without a traceback; the one error line (argparse prints its usage line above it)."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse: usage, then one error line
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1
    return lines[0]


@pytest.mark.parametrize("argv, flag, allowed", [
    (["power", "run", "--metric", "accuracy", "--drop", "nan"], "--drop", "a finite number > 0"),
    (["power", "run", "--metric", "accuracy", "--drop=inf"], "--drop", "a finite number > 0"),
    (["power", "run", "--metric", "accuracy", "--drop", "0.02", "--alpha", "1"], "--alpha", "in (0, 1)"),
    (["power", "run", "--metric", "accuracy", "--drop", "0.02", "--correlation", "-1"], "--correlation", "in (-1, 1)"),
    (["score", "factual", GTZAN, "--vocab", "gtzan", "--n-permutations", "0"], "--n-permutations", "an integer in [1, 1000000]"),
    (["score", "factual", GTZAN, "--vocab", "gtzan", "--n-permutations", "-5"], "--n-permutations", "an integer in [1, 1000000]"),
    (["score", "factual", GTZAN, "--vocab", "gtzan", "--seed", "-1"], "--seed", "an integer >= 0"),
    (["score", "freeform", "x.jsonl", "--random-draws", "0"], "--random-draws", "an integer >= 1"),
    (["score", "triplets", "--triplets", "genre", "--max-triplets", "0"], "--max-triplets", "an integer >= 1"),
    (["compare", "a", "b", "--alpha", "nan"], "--alpha", "in (0, 1)"),
    (["compare", "a", "b", "--margin", "mir/accuracy=-0.1"], "--margin", "a finite number >= 0"),
    (["generate", "--model", "x", "--dataset", "x", "--max-tokens", "0"], "--max-tokens", "an integer >= 1"),
    (["rewrite", "x", "--model", "m", "--out", "o", "--timeout", "inf"], "--timeout", "a finite number > 0"),
])
def test_numbers_out_of_range_are_refused_naming_the_flag_and_the_range(argv, flag, allowed, capsys):
    line = _refused(argv, capsys)
    assert flag in line and allowed in line


@pytest.mark.parametrize("content, problem", [
    ("[]", "expected a JSON object"),
    ('{"labels": {"rock": 5}}', "label 'rock' needs a non-empty name and a list of synonym strings"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
])
def test_a_bad_vocabulary_file_is_blamed_not_the_answer_file(tmp_path, capsys, content, problem):
    vocab = tmp_path / "genres.json"
    vocab.write_text(content)
    line = _refused(["score", "factual", GTZAN, "--vocab", str(vocab), "--json"], capsys)
    assert str(vocab) in line and problem in line and "ltu_GTZAN" not in line


def test_a_vocabulary_given_as_a_list_of_labels_is_read(tmp_path, capsys):
    vocab = tmp_path / "genres.json"
    vocab.write_text('{"labels": ["rock", "pop"]}')
    assert main(["score", "factual", GTZAN, "--vocab", str(vocab), "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["per_label"]) == {"rock", "pop"}


def test_an_ontology_without_the_genre_class_names_the_file_and_the_fix(tmp_path, capsys):
    ontology = tmp_path / "ontology.json"
    ontology.write_text(json.dumps([{"id": "/m/04rlf", "name": "Music", "child_ids": []}]))
    line = _refused(["score", "triplets", "--triplets", "genre", "--ontology", str(ontology), "--json"], capsys)
    assert str(ontology) in line and "/m/0kpv1t (genre)" in line and "--ontology" in line


def test_power_json_is_standard_json(tmp_path, capsys):
    (tmp_path / "results.json").write_text('{"meta": {}, "gates": []}')
    (tmp_path / "scores.jsonl").write_text(json.dumps({"metric": "accuracy", "condition": "correct", "protocol": "mir",
                                                       "ids": ["a", "b"], "values": [1.0, 0.0]}) + "\n")
    assert main(["power", str(tmp_path), "--metric", "accuracy", "--drop", "1e-9", "--json"]) == 0

    def refuse(constant):
        raise AssertionError(f"non-standard JSON constant {constant}")

    out = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert out["drop"] == 1e-9 and out["pilot_items"] == 2 and out["items_needed"] > 10**18
    line = _refused(["power", str(tmp_path), "--metric", "accuracy", "--drop", "1e-300", "--json"], capsys)
    assert "--drop 1e-300: no finite number of items" in line
