"""A session leaves the checkout as it found it unless it recorded results: the musiceval
plugin claims its default results folder at start-up and removes it again when nothing was
recorded (``pytest tests/`` used to leave ``.musiceval/results/<timestamp>/.session.lock``).
The repository's own pytest configuration keeps pytest-benchmark's ``.benchmarks/`` and
Hypothesis' ``.hypothesis/`` out of the checkout (``pyproject.toml``, ``tests/conftest.py``)."""
from __future__ import annotations

from pathlib import Path

import pytest

UNIT_TEST = "def test_plain():\n    assert 1 + 1 == 2\n"
GATE_TEST = '''
import numpy as np
from musiceval.records import ItemScores

def test_gate(gate):
    gate.at_least(ItemScores("m", ids=[str(i) for i in range(20)], values=np.ones(20)), 0.5, name="ones")
'''


#: what pytester itself writes beside the project (the subprocess' output and its --basetemp)
PYTESTER_OWN = ("stdout", "stderr", "runpytest")


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")
            if "__pycache__" not in p.parts and not p.relative_to(root).parts[0].startswith(PYTESTER_OWN)}


@pytest.mark.parametrize("args", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_session_without_gates_leaves_no_results_folder(pytester: pytest.Pytester, args):
    pytester.makepyfile(test_unit=UNIT_TEST)
    pytester.makefile(".toml", pyproject="[tool.pytest.ini_options]\naddopts = '-p no:cacheprovider -p no:benchmark'\n")
    before = _tree(pytester.path)
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=1)
    assert _tree(pytester.path) == before


def test_a_session_with_gates_keeps_its_results_and_drops_its_lock(pytester: pytest.Pytester):
    pytester.makepyfile(test_gates=GATE_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:benchmark", "--musiceval-allow-empty")
    result.assert_outcomes(passed=1)
    (run,) = (pytester.path / ".musiceval" / "results").iterdir()
    assert (run / "results.json").is_file() and not (run / ".session.lock").exists()


def test_an_existing_results_root_is_kept_when_nothing_was_recorded(pytester: pytest.Pytester):
    older = pytester.path / ".musiceval" / "results" / "older-run"
    older.mkdir(parents=True)
    (older / "results.json").write_text("{}")
    pytester.makepyfile(test_unit=UNIT_TEST)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:benchmark").assert_outcomes(passed=1)
    assert [p.name for p in (pytester.path / ".musiceval" / "results").iterdir()] == ["older-run"]
