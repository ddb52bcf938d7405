"""Input handling of #14, one behaviour per test: per-line failures naming file:line, or exit 2 with one line."""
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
    code = main(["generate", "--model", "recorded:" + str(path), "--dataset", str(path), "--cache", str(tmp_path / "c")])
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
    ("{", "not a musiceval results file", True),
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
