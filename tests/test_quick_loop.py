"""The quick loop (``pytest tests/ -m quick``, listed in tests/conftest.py) names real modules and
reaches every package's tests, so it cannot shrink silently when a module moves."""
from __future__ import annotations

from pathlib import Path

from tests.conftest import QUICK_MODULES

TESTS = Path(__file__).resolve().parent


def test_every_quick_module_exists():
    missing = sorted(m for m in QUICK_MODULES if not (TESTS / m).is_file())
    assert not missing, f"tests/conftest.py QUICK_MODULES names modules that do not exist: {missing}"


def test_every_test_package_has_a_quick_module():
    packages = {p.name for p in TESTS.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    covered = {m.split("/", 1)[0] for m in QUICK_MODULES if "/" in m}
    assert packages - covered == set(), f"no quick module in tests/{sorted(packages - covered)}"
    assert any("/" not in m for m in QUICK_MODULES)  # and the top-level modules (gates, stats, CLI, report)
