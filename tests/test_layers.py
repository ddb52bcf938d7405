"""Data flows one way (DESIGN.md): every package and module of musiceval has a tier, and a module
imports only from tiers below its own, not even lazily inside a function. Every ``import
musiceval...`` of every module is checked, so an upward import (or an import cycle, which needs
one) fails here with the module, line and target, and a new top-level module without a tier fails
until it is given one."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "musiceval"

#: lowest first. Records and plain helpers; statistics, parsers and extraction; the data layer; what
#: reads data (encoders, models, control conditions); metrics and generation; the evaluation engines;
#: the protocols; provenance; results read back and compared; the suite config and the reports; the commands;
#: pytest and the CLI; the release gates.
TIERS: tuple[frozenset[str], ...] = tuple(frozenset(t) for t in (
    {"__init__", "records", "schemas", "registry", "cmibench_vocab", "ranges", "redact", "progress", "cache_dir"},
    {"exclusions", "keys", "stats", "parsers", "extraction", "verdict"},
    {"data"},
    {"encoders", "conditions", "models"},
    {"metrics", "generate", "llm", "gates"},
    {"protocols"},
    {"provenance"},
    {"results"},
    {"suite", "report"},
    {"commands", "calibration_blind"},
    {"pytest_plugin", "cli"},
    {"evals", "__main__"},
))
TIER = {name: k for k, names in enumerate(TIERS) for name in names}


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "musiceval":  # from musiceval import progress
            names = [f"musiceval.{a.name}" for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "musiceval" and len(parts) > 1:
                yield node.lineno, parts[1]


def _top(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_package_and_module_has_a_tier():
    names = {_top(p) for p in _modules()}
    assert names - set(TIER) == set(), "give these a tier in tests/test_layers.py TIERS"
    assert set(TIER) - names == set(), "tiers name packages or modules that no longer exist"


@pytest.mark.parametrize("name", sorted(TIER))
def test_a_module_imports_only_from_tiers_below_its_own(name):
    upward = [f"musiceval/{path.relative_to(PACKAGE)}:{line} (tier {TIER[name]}) imports musiceval.{target} "
              f"(tier {TIER.get(target, '?')})"
              for path in _modules() if _top(path) == name
              for line, target in _imports(path)
              if target != name and target != "__version__" and TIER.get(target, len(TIERS)) >= TIER[name]]
    assert not upward, "imports back up the tiers:\n" + "\n".join(upward)


def test_the_checker_sees_lazy_imports_inside_functions(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from musiceval.protocols.factual.engine import score_factual\n"
                      "    from musiceval import commands, records\n", encoding="utf-8")
    assert list(_imports(module)) == [(2, "protocols"), (3, "commands"), (3, "records")]
