"""What a session prints: a known musiceval error is one line with its fix (not a traceback per
test) and the verdict names each cause once with the tests it hit; an unexpected exception keeps
its traceback; one progress line per finished answer source; the per-worker parts are gone once
merged and the per-item files are compressed."""
from __future__ import annotations

import lzma
import json
import shutil
from pathlib import Path

import pytest

from musiceval.verdict import group_errors

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"

ERRORS = '''
import pytest
from musiceval.data.errors import InputError

MESSAGE = "the answers file runs/x.jsonl is missing its column 'response' " * 8 + "; pass --fix to repair it"

@pytest.fixture
def broken():
    raise InputError(MESSAGE)

@pytest.mark.parametrize("k", range(3))
def test_needs_the_fixture(broken, gate, k):
    pass

def test_raises_in_the_test(gate):
    raise InputError(MESSAGE)

def test_a_bug(gate):
    raise ZeroDivisionError("an unexpected bug keeps its traceback")
'''


def test_a_known_error_is_one_line_and_one_reason_per_cause(pytester: pytest.Pytester):
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "test_errors.py").write_text(ERRORS)
    (pytester.path / "musiceval.toml").write_text('[[model]]\nname = "M"\n')
    out = pytester.runpytest_subprocess("evals", "-p", "no:cacheprovider", "-p", "no:randomly",
                                        "--musiceval-results-dir", str(pytester.path / "res"))
    log = out.stdout.str()
    message = "InputError: " + "the answers file runs/x.jsonl is missing its column 'response' " * 7
    assert log.count("def broken") == 0 and log.count("raise InputError") == 0  # no traceback of a known error
    assert "ZeroDivisionError" in log and "def test_a_bug" in log  # a bug keeps its traceback
    run = json.loads((pytester.path / "res" / "results.json").read_text())
    reasons = run["verdict_detail"]["reasons"]
    known = [r for r in reasons if r.startswith("InputError")]
    assert len(known) == 1 and message.strip() in known[0] and known[0].count("pass --fix to repair it") == 1
    assert "(4 tests: test_needs_the_fixture[0], test_needs_the_fixture[1], test_needs_the_fixture[2] and 1 more)" in known[0]
    assert any(r.endswith("ZeroDivisionError: an unexpected bug keeps its traceback") for r in reasons)
    assert run["verdict"] == "ERROR" and out.ret == 1
    assert not (pytester.path / "res" / "parts").exists()


def test_group_errors_names_a_single_occurrence_where_it_happened():
    assert group_errors([("a.py::t[1]", "errored in setup", "E: x"), ("a.py::t[2]", "raised", "E: y"),
                         ("a.py::t[3]", "raised", "E: x")]) == ["E: x (2 tests: t[1], t[3])", "a.py::t[2] raised: E: y"]


def _cmi_project(pytester: pytest.Pytester) -> pytest.Pytester:
    if not (SHARED / "cmi-bench" / "outputs" / "ltu").is_dir():
        pytest.skip(f"{SHARED} absent (../shared/data is optional)")
    (pytester.path / "evals").mkdir()
    shutil.copy(REPO / "evals" / "test_musiceval.py", pytester.path / "evals")
    (pytester.path / "cmi").mkdir()
    for task in ("GTZAN", "GS_key", "Nsynth_instrument"):
        records = json.loads((SHARED / "cmi-bench" / "outputs" / "ltu" / f"ltu_{task}.jsonl").read_text())[:60]
        (pytester.path / "cmi" / f"m_{task}.jsonl").write_text(json.dumps(records))
    (pytester.path / "musiceval.toml").write_text('[[model]]\nname = "M"\n[[model.answers]]\nprotocol = "mir"\n'
                                                  'dir = "cmi"\n[defaults]\nmin_coverage = 0.01\n')
    return pytester


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["no-xdist", "xdist"])
def test_one_progress_line_per_finished_source_and_compressed_artefacts(pytester: pytest.Pytester, workers):
    project = _cmi_project(pytester)
    out = project.runpytest_subprocess("evals", "-p", "no:cacheprovider", "-p", "no:randomly", *workers,
                                       "--musiceval-results-dir", str(project.path / "res"))
    lines = [line for line in out.outlines if line.startswith("musiceval: [")]
    assert len(lines) == 3, out.stdout.str()[-3000:]
    assert [line.split("]")[0] for line in lines] == ["musiceval: [1/3", "musiceval: [2/3", "musiceval: [3/3"]
    assert all(" items, " in line and " tests in " in line for line in lines)
    assert "left" in lines[1] and "left" not in lines[2]
    assert lines[2].endswith("180 items done")
    res = project.path / "res"
    assert not (res / "parts").exists() and not (res / "scores.jsonl").exists()
    rows = [json.loads(line) for line in lzma.open(res / "scores.jsonl.xz", "rt")]
    assert rows and {r["source"] for r in rows} == {"GTZAN", "GS_key", "Nsynth_instrument"}
    from musiceval import results

    assert not results.load(res).scores.empty  # the reader takes the compressed file
