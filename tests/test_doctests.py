"""Every example in musiceval's docstrings runs and prints what it shows (``doctest``): an example a
reader copies is tested like any other code (one marked ``# doctest: +SKIP`` needs files a test
does not have: a results folder, a model)."""
from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "musiceval"


def _modules_with_examples() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if ">>> " in path.read_text(encoding="utf-8"):
            parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = _modules_with_examples()


def test_the_examples_are_found():
    # the matchers' upstream quirks and the parsers' rules are documented by example
    assert {"musiceval.metrics.airbench_matcher", "musiceval.metrics.choice"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_every_docstring_example_runs(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} docstring examples fail (run it with -s)"
