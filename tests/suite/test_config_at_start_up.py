"""A config mistake stops pytest at start-up with exit 2 and one line naming the key and the fix,
never an INTERNALERROR traceback (docs/hardening.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ANSWERS = "[[model]]\nname = 'm'\n[[model.answers]]\nprotocol = 'factual'\nfile = 'a.jsonl'\n"


@pytest.mark.parametrize("config, message", [
    pytest.param("x = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply to read", id="deep-toml"),
    pytest.param(ANSWERS + "vocab = []\n", "vocab: expected str, got list", id="vocab-list"),
    pytest.param("[factual]\nn_permutations = 0\n", "n_permutations: expected an integer in [1, 1000000], got 0", id="no-permutations"),
    pytest.param("[defaults]\nalpha = nan\n", "alpha: expected a finite number in (0, 1), got nan", id="alpha-nan"),
])
def test_pytest_exits_2_with_one_line(pytester: pytest.Pytester, monkeypatch, config, message):
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the subprocess imports this checkout's plugin
    (pytester.path / "a.jsonl").write_text(json.dumps({"item_id": "1", "text": "x"}) + "\n")
    (pytester.path / "musiceval.toml").write_text(config)
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--musiceval-results-dir", str(pytester.path / "r"))
    assert result.ret == 2
    lines = [line for line in result.stderr.lines if "musiceval:" in line]
    assert len(lines) == 1 and message in lines[0]
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
