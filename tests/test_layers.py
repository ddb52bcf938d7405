"""Data flows one way (DESIGN.md): every package and module of musiceval has a tier, and a module
imports only from tiers below its own, not even lazily inside a function. Every ``import
musiceval...`` of every module is checked, so an upward import (or an import cycle, which needs
one) fails here with the module, line and target, and a new top-level module without a tier fails
until it is given one. Inside one tier, modules import each other without a cycle either: the
module graph (lazy imports included) is checked for cycles of any length."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "musiceval"

#: lowest first. Records and plain helpers; statistics, parsers and extraction; the data layer; what
#: reads data (encoders, models, control conditions); metrics and generation; the evaluation engines;
#: the protocols; provenance; results read back and compared; the suite config and the reports; the commands;
#: pytest and the CLI; the release gates.
TIERS: tuple[frozenset[str], ...] = tuple(frozenset(t) for t in (
    {"__init__", "records", "schemas", "registry", "cmibench_vocab", "ranges", "redact", "progress", "cache_dir",
     "writes", "skip_reasons"},
    {"exclusions", "keys", "stats", "parsers", "extraction", "verdict"},
    {"data"},
    {"encoders", "conditions", "models"},
    {"metrics", "generate", "llm", "gates", "wordnet_setup"},
    {"protocols"},
    {"provenance"},
    {"results"},
    {"suite", "report"},
    {"commands", "calibration_blind", "calibration_questions"},
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


def test_the_release_gates_take_what_the_plugin_knows_as_fixtures():
    """The gates (``musiceval.evals``) and the plugin that collects them do not import each other's
    names: what both read sits below both (``musiceval.skip_reasons``), and what only the running
    session knows (its rootdir, a test's id) reaches a gate as a fixture."""
    reaching = [f"musiceval/{path.relative_to(PACKAGE)}:{line}" for path in _modules() if _top(path) == "evals"
                for line, target in _imports(path) if target == "pytest_plugin"]
    assert not reaching, "a release gate imports the pytest plugin:\n" + "\n".join(reaching)


def test_the_checker_sees_lazy_imports_inside_functions(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from musiceval.protocols.factual.engine import score_factual\n"
                      "    from musiceval import commands, records\n", encoding="utf-8")
    assert list(_imports(module)) == [(2, "protocols"), (3, "commands"), (3, "records")]


def _module_name(path: Path) -> str:
    parts = ("musiceval", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_graph() -> dict[str, set[str]]:
    """Module -> the musiceval modules it imports (``from pkg import sub`` is the submodule when
    ``sub`` is one, else ``pkg``), lazy imports included."""
    known = {_module_name(p): p for p in _modules()}
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                            for a in node.names}
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
        graph[name] = {t for t in targets if t in known and t != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_no_module_imports_itself_through_others():
    cycles = _cycles(_module_graph())
    assert not cycles, "import cycles (lazy imports count):\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_sees_a_cycle_through_a_lazy_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
