"""``musiceval report``, ``compare`` and ``power`` never trust the ``verdict`` word of results.json
(docs/hardening.md "The verdict is recomputed, never trusted"): the word is decided again from the
gates and the session's own inputs to :func:`musiceval.verdict.decide` (``verdict_detail.inputs``),
and a file whose stored word or detail disagrees is refused with exit 2 and one line naming the file
and the field.

The property test edits a results folder a real pytest session wrote (the verdict word, a gate's
outcome, a field deleted, a number changed, ``scores.jsonl.xz`` cut short, ``verdict_detail`` edited)
and feeds it to the three commands in-process: each renders the word the gates give, or refuses
the folder (exit 2, naming it); never a traceback, never exit 0 beside a word the gates do not give.
"""
from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from musiceval.cli import main
from musiceval.verdict import VERDICTS, decide

REPO = Path(__file__).resolve().parents[1]

GATES = '''
import numpy as np
from musiceval.records import ItemScores
from musiceval.protocols.checks import CheckGate

def about(gate, check):
    return CheckGate(gate, check=check, model="M", source="file", protocol="demo", rule=gate.rule_for(check))

def scores(metric, mean, seed):
    return ItemScores(metric, [str(i) for i in range(200)], np.random.default_rng(seed).normal(mean, 0.1, 200))

def test_accuracy(gate):
    about(gate, "demo/accuracy/M/file/acc").greater_than_chance(scores("acc", 0.7, 0), 0.25, name="acc beats 0.25")

def test_recall(gate):
    about(gate, "demo/recall/M/file/recall").greater_than_chance(scores("recall", RECALL, 1), 0.25, name="recall beats 0.25")
'''


def _session(root: Path, recall: float) -> Path:
    """A results folder written by a real pytest session (the plugin's own writer)."""
    (root / "evals").mkdir(parents=True)
    (root / "evals" / "test_gates.py").write_text(GATES.replace("RECALL", repr(recall)), encoding="utf-8")
    (root / "musiceval.toml").write_text('[[model]]\nname = "M"\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "pytest", "evals", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
                    "--musiceval-results-dir", str(root / "res")], cwd=root, env=env, capture_output=True, timeout=300)
    assert (root / "res" / "results.json").is_file()
    return root / "res"


@pytest.fixture(scope="module")
def sessions(tmp_path_factory) -> dict[str, Path]:
    """``{"PASSED": folder, "FAILED": folder}``."""
    base = tmp_path_factory.mktemp("sessions")
    out = {"PASSED": _session(base / "passed", 0.7), "FAILED": _session(base / "failed", 0.1)}
    for word, folder in out.items():
        assert json.loads((folder / "results.json").read_text())["verdict"] == word
    return out


def _cli(*argv: str) -> tuple[int, str, str]:
    """``musiceval ARGV`` in-process: (exit code, stdout, stderr); an exception escapes (a traceback)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*argv, "--no-progress"] if argv[0] == "report" else list(argv))
    return code, out.getvalue(), err.getvalue()


def _edit(folder: Path, change) -> dict:
    path = folder / "results.json"
    run = json.loads(path.read_text(encoding="utf-8"))
    change(run)
    path.write_text(json.dumps(run, indent=2), encoding="utf-8")
    return run


def _copy(folder: Path, target: Path) -> Path:
    shutil.copytree(folder, target)
    return target


def test_a_bare_passed_word_is_refused_naming_the_file_and_the_field(tmp_path):
    (tmp_path / "results.json").write_text('{"verdict":"PASSED"}', encoding="utf-8")
    code, out, err = _cli("report", str(tmp_path))
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(f"musiceval: error: {tmp_path / 'results.json'}: ") and "'verdict'" in line
    assert not (tmp_path / "report.html").exists()


def test_a_failed_run_edited_to_passed_is_refused_by_report_compare_and_power(sessions, tmp_path):
    edited = _copy(sessions["FAILED"], tmp_path / "edited")
    _edit(edited, lambda run: run.update(verdict="PASSED"))
    (edited / "report.html").unlink()
    for argv in (("report", str(edited)), ("compare", str(sessions["FAILED"]), str(edited)),
                 ("power", str(edited), "--metric", "acc", "--drop", "0.05")):
        code, _, err = _cli(*argv)
        (line,) = err.strip().splitlines()
        assert code == 2, argv
        assert line.startswith(f"musiceval: error: {edited / 'results.json'}: field 'verdict' says PASSED"), line
        assert "FAILED" in line
    assert not (edited / "report.html").exists()  # no page that says PASSED above a FAILED body


def test_an_edited_verdict_detail_is_refused_naming_the_field(sessions, tmp_path):
    edited = _copy(sessions["FAILED"], tmp_path / "edited")
    _edit(edited, lambda run: run["verdict_detail"].update(line="musiceval: PASSED: M: 2 of 2 required gates passed"))
    code, _, err = _cli("report", str(edited))
    assert code == 2 and "field 'verdict_detail.line'" in err and str(edited / "results.json") in err


def test_a_results_file_of_a_version_that_did_not_record_unpinned_sources_is_still_read(sessions, tmp_path):
    older = _copy(sessions["FAILED"], tmp_path / "older")
    _edit(older, lambda run: (run["verdict_detail"].pop("unpinned"), run["verdict_detail"]["inputs"].pop("unpinned")))
    code, out, err = _cli("report", str(older))
    assert code == 0 and "  FAILED (" in out, err


def test_the_session_records_its_inputs_to_the_verdict_and_the_report_repeats_its_word(sessions):
    for word, folder in sessions.items():
        run = json.loads((folder / "results.json").read_text())
        inputs = run["verdict_detail"]["inputs"]
        assert inputs["declared"] == ["M"] and inputs["pytest_exit"] == run["meta"]["exitstatus"]
        assert decide(run["gates"], **inputs).as_dict() == run["verdict_detail"]
        code, out, _ = _cli("report", str(folder))
        assert code == 0 and f"  {word} (" in out
        assert f'data-verdict="{word}"' in (folder / "report.html").read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- the property test


def _paths(value, prefix=()) -> list[tuple]:
    """Every key path of the JSON value (dict keys and list indices)."""
    out = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        out.append((*prefix, key))
        out += _paths(child, (*prefix, key))
    return out


def _get(run, path):
    for key in path:
        run = run[key]
    return run


def _set(run, path, value):
    _get(run, path[:-1])[path[-1]] = value


def _delete(run, path):
    parent = _get(run, path[:-1])
    del parent[path[-1]]


def _numbers(run) -> list[tuple]:
    return [p for p in _paths(run) if isinstance(_get(run, p), (int, float)) and not isinstance(_get(run, p), bool)]


JSONISH = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8)
                       | st.sampled_from(VERDICTS), lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)
NUMBERS = st.integers(-3, 10**6) | st.floats(-1e6, 1e6, allow_nan=False) | st.sampled_from([0, 1, 2, 10**30])


@st.composite
def edits(draw, run: dict):
    """(description, function editing the run dict, or None, bytes to keep of scores.jsonl.xz or None)."""
    kind = draw(st.sampled_from(["verdict", "outcome", "delete", "number", "truncate", "detail"]))
    if kind == "verdict":
        word = draw(st.sampled_from([*VERDICTS, "passed", ""]))
        return f"verdict={word}", lambda r: r.update(verdict=word), None
    if kind == "outcome":
        k = draw(st.integers(0, len(run["gates"]) - 1))
        outcome = draw(st.sampled_from(["PASS", "FAIL", "INCONCLUSIVE", "FINDING", "SKIPPED", "N/A", "pass"]))
        return f"gates[{k}].outcome={outcome}", lambda r: r["gates"][k].update(outcome=outcome), None
    if kind == "delete":
        path = draw(st.sampled_from(_paths(run)))
        return f"del {path}", lambda r: _delete(r, path), None
    if kind == "number":
        path, value = draw(st.sampled_from(_numbers(run))), draw(NUMBERS)
        return f"{path}={value!r}", lambda r: _set(r, path, value), None
    if kind == "truncate":
        return "truncate scores", None, draw(st.integers(0, 400))
    paths = [p for p in _paths(run["verdict_detail"])]
    path, value = ("verdict_detail", *draw(st.sampled_from(paths))), draw(JSONISH)
    return f"{path}={value!r}", lambda r: _set(r, path, value), None


def _shown_word(out: str) -> str:
    found = re.search(r"report\.html  (.+?) \(", out)
    assert found, out
    return found.group(1)


def _oracle(run: dict, original: dict) -> str:
    """The word the edited file's gates give under the session's own (unedited) inputs."""
    gates = [g for g in run.get("gates", []) if isinstance(g, dict)] if isinstance(run.get("gates"), list) else []
    return decide(gates, **original["verdict_detail"]["inputs"]).word


def _check(argv: tuple[str, ...], edited: Path, run: dict, original: dict, what: str) -> None:
    code, out, err = _cli(*argv)
    event(f"{argv[0]}: exit {code}")
    if code == 2:
        lines = err.strip().splitlines()
        assert lines and lines[0].startswith("musiceval: error: "), (what, argv, err)
        assert edited.name in err, (what, argv, err)
        return
    assert code == 0, (what, argv, code, err)
    expected, stored = _oracle(run, original), run.get("verdict")
    assert stored in (None, expected), (what, argv, "accepted a word the gates do not give", stored, expected)
    if argv[0] == "report":
        assert _shown_word(out) == expected, (what, out)
        html = (edited / "report.html").read_text(encoding="utf-8")
        assert f'data-verdict="{expected}"' in html, what


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_edited_results_are_rendered_with_the_word_their_gates_give_or_refused(sessions, data):
    word = data.draw(st.sampled_from(sorted(sessions)))
    base = sessions[word]
    original = json.loads((base / "results.json").read_text(encoding="utf-8"))
    what, change, keep = data.draw(edits(original))
    with tempfile.TemporaryDirectory() as tmp:
        edited = _copy(base, Path(tmp) / "edited")
        run = copy.deepcopy(original)
        if change is not None:
            change(run)
            (edited / "results.json").write_text(json.dumps(run, indent=2), encoding="utf-8")
        if keep is not None:
            scores = edited / "scores.jsonl.xz"
            scores.write_bytes(scores.read_bytes()[:keep])
        for argv in (("report", str(edited)), ("compare", str(base), str(edited)),
                     ("power", str(edited), "--metric", "acc", "--drop", "0.05")):
            _check(argv, edited, run, original, what)
