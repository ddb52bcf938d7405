"""Data flows one way (DESIGN.md): every package and module of musiceval has a tier, and a module
imports only from tiers below its own, not even lazily inside a function. Every ``import
musiceval...`` of every module is checked, so an upward import (or an import cycle, which needs
one) fails here with the module, line and target, and a new top-level module without a tier fails
until it is given one. Inside one tier, modules import each other without a cycle either: the
module graph (lazy imports included) is checked for cycles of any length. A registry that imports
its builtin modules by name is filled in a fresh interpreter and may not have loaded anything
above its own tier.

A protocol's home (``musiceval/protocols/<name>/``) holds its own layers as modules named by role
(docs/extending.md): the tier of a module there is its role's (:data:`ROLES`: ``formats``,
``metrics``, ``engine``, ``score``, ``gates``, ...), just above the shared package of the same
job, so a home's ``gates`` may import its ``engine`` and never the reverse, shared code never
imports a home's layer above its own, and no home imports another's. Commands live in
``musiceval/commands/``: no protocol module imports them."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "musiceval"

#: lowest first. Records and plain helpers; statistics, parsers, extraction, prompts and vocabularies,
#: audio I/O; answer files and their formats (the data layer); the benchmark catalogue and the
#: datasets' own files; what reads data (encoders, models, control conditions); metrics and generation; the evaluation
#: engines; the protocols; provenance; results read back and compared; the suite config and the
#: reports; the commands; pytest and the CLI; the release gates.
TIERS: tuple[frozenset[str], ...] = tuple(frozenset(t) for t in (
    {"__init__", "records", "schemas", "registry", "ranges", "redact", "progress", "cache_dir",
     "writes", "skip_reasons", "human_baselines"},
    {"exclusions", "keys", "stats", "parsers", "extraction", "verdict", "vocab", "audio"},
    {"data"},
    {"catalogue"},
    {"encoders", "conditions", "models"},
    {"metrics", "generate", "llm", "gates", "wordnet_setup"},
    {"protocols"},
    {"provenance"},
    {"results"},
    {"suite", "report"},
    {"commands", "calibration"},
    {"pytest_plugin", "cli"},
    {"evals", "__main__"},
))
TIER = {name: k for k, names in enumerate(TIERS) for name in names}

#: a protocol home's module role (its file or sub-package name up to the first ``_``: ``gates_live``
#: is a ``gates`` module) -> the shared package of the same job; the role sits half a tier above it
ROLES = {"__init__": "protocols", "protocol": "protocols", "engine": "protocols", "live": "protocols",
         "variants": "protocols", "models": "protocols", "score": "protocols", "formats": "data", "metrics": "metrics",
         "gates": "evals"}


def _home(parts: tuple[str, ...]) -> str | None:
    """The protocol whose home holds module ``musiceval.<parts>``, or None for shared code."""
    if len(parts) > 1 and parts[0] == "protocols" and (PACKAGE / "protocols" / parts[1]).is_dir():
        return parts[1]
    return None


def _tier(parts: tuple[str, ...]) -> float | None:
    """The tier of module ``musiceval.<parts>``: its top package's, or in a protocol home its role's."""
    if _home(parts):
        role = ROLES.get(parts[2].split("_")[0] if len(parts) > 2 else "__init__")
        return None if role is None else TIER[role] + 0.5
    return TIER.get(parts[0])


def _parts(path: Path) -> tuple[str, ...]:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts


def _imports(path: Path):
    """``(line, target parts)`` of every ``musiceval`` import of ``path``; ``from pkg import sub``
    is the submodule ``sub`` when it is one."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" if _is_module(f"{node.module}.{a.name}") else node.module
                     for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = tuple(name.split("."))
            if parts[0] == "musiceval" and len(parts) > 1 and parts[1] != "__version__":
                yield node.lineno, parts[1:]


def _is_module(dotted: str) -> bool:
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _top(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _upward(path: Path, line: int, target: tuple[str, ...]) -> str | None:
    """Why ``path``'s import of ``musiceval.<target>`` at ``line`` breaks the layering, or None."""
    source = _parts(path)
    home, target_home = _home(source), _home(target)
    where = f"musiceval/{path.relative_to(PACKAGE)}:{line}"
    if home and target_home and home != target_home:
        return f"{where}: the {home} protocol imports the {target_home} protocol's home (musiceval.{'.'.join(target)})"
    mine, theirs = _tier(source), _tier(target)
    if home and home == target_home:
        ok = theirs is not None and theirs <= mine  # a home's layers import their own role or below
    else:
        ok = (source[0] == target[0] and not home and not target_home) or (theirs is not None and theirs < mine)
    return None if ok else f"{where} (tier {mine}) imports musiceval.{'.'.join(target)} (tier {theirs})"


def test_every_package_and_module_has_a_tier():
    names = {_top(p) for p in _modules()}
    assert names - set(TIER) == set(), "give these a tier in tests/test_layers.py TIERS"
    assert set(TIER) - names == set(), "tiers name packages or modules that no longer exist"
    roleless = [f"musiceval/{p.relative_to(PACKAGE)}" for p in _modules() if _tier(_parts(p)) is None]
    assert not roleless, "name these modules of a protocol's home by a role of ROLES in tests/test_layers.py"


@pytest.mark.parametrize("name", sorted(TIER))
def test_a_module_imports_only_from_tiers_below_its_own(name):
    upward = [why for path in _modules() if _top(path) == name
              for line, target in _imports(path) if (why := _upward(path, line, target))]
    assert not upward, "imports back up the tiers:\n" + "\n".join(upward)


def test_no_protocol_module_imports_the_commands():
    """Commands live in ``musiceval/commands/`` (docs/extending.md): a protocol's home, and the
    protocol layer's shared modules, hold what a command calls, never the command itself, so no
    module under ``musiceval/protocols/`` imports ``musiceval.commands``, not even lazily."""
    reaching = [f"musiceval/{path.relative_to(PACKAGE)}:{line}" for path in _modules() if _top(path) == "protocols"
                for line, target in _imports(path) if target[0] == "commands"]
    assert not reaching, "move these to musiceval/commands/ (a command module):\n" + "\n".join(reaching)


def test_no_protocol_module_reaches_above_the_protocols():
    """A protocol's home holds its layers, gates included, in one folder that imports nothing above
    ``musiceval/protocols/``: the checks every protocol's gates apply live in
    :mod:`musiceval.protocols.checks`, the synthesised clips are :data:`musiceval.audio.SYNTHESISED_AUDIO`,
    and what only the suite knows (its config, the baseline, the results folder) reaches a gate as a
    fixture. So the package draws with no arrow from the protocols back up."""
    above = {name for name, tier in TIER.items() if tier > TIER["protocols"]}
    reaching = [f"musiceval/{path.relative_to(PACKAGE)}:{line} imports musiceval.{'.'.join(target)}"
                for path in _modules() if _top(path) == "protocols"
                for line, target in _imports(path) if target[0] in above]
    assert not reaching, "take these as fixtures or move what they read below the protocols:\n" + "\n".join(reaching)


def test_the_release_gates_take_what_the_plugin_knows_as_fixtures():
    """The gates (every module :data:`musiceval.evals.MODULES` names) and the plugin that collects
    them do not import each other's names, not even by a module name in a string: what both read
    sits below both (``musiceval.skip_reasons``), what only the running session knows (its
    rootdir, a test's id) reaches a gate as a fixture, and the module pytest registers
    (``musiceval.evals.plugin``, above both) hands the plugin the gates to collect."""
    from musiceval.evals import MODULES

    gates = [PACKAGE.parent.joinpath(*m.split(".")).with_suffix(".py") for m in (*MODULES, "musiceval.evals.release_gates")]
    assert any(_home(_parts(p)) for p in gates), "no protocol home holds gates: is the role check still looking?"
    reaching = [f"musiceval/{path.relative_to(PACKAGE)}:{line}" for path in gates
                for line, target in _imports(path) if target[0] == "pytest_plugin"]
    assert not reaching, "a release gate imports the pytest plugin:\n" + "\n".join(reaching)
    by_name = [f"musiceval/{path.relative_to(PACKAGE)}:{node.lineno}" for path in _modules() if _top(path) == "pytest_plugin"
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in
               ("import_module", "__import__")]
    assert not by_name, "the plugin loads a module by name:\n" + "\n".join(by_name)


def test_roles_order_a_protocol_home(tmp_path, monkeypatch):
    """The role rule on a home made up for the test: its engine importing its gates, and one home
    importing another, are both refused; its gates importing its engine is fine."""
    home = tmp_path / "musiceval" / "protocols"
    for name in ("tempo", "other"):
        (home / name).mkdir(parents=True)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "musiceval")
    engine = home / "tempo" / "engine.py"
    gates = home / "tempo" / "gates.py"
    for path in (engine, gates, home / "other" / "engine.py"):
        path.write_text("", encoding="utf-8")
    assert _upward(gates, 1, ("protocols", "tempo", "engine")) is None
    assert f"tier {TIER['protocols'] + 0.5}" in _upward(engine, 1, ("protocols", "tempo", "gates"))
    assert "imports the other protocol's home" in _upward(engine, 1, ("protocols", "other", "engine"))
    assert f"tier {TIER['evals'] + 0.5}" in _upward(home.parent / "metrics.py", 1, ("protocols", "tempo", "gates"))
    assert _upward(home.parent / "report.py", 1, ("protocols", "tempo", "engine")) is None


def test_the_checker_sees_lazy_imports_inside_functions(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from musiceval.protocols.factual.engine import score_factual\n"
                      "    from musiceval import commands, records\n", encoding="utf-8")
    assert [(line, target[0]) for line, target in _imports(module)] == [(2, "protocols"), (3, "commands"),
                                                                         (3, "records")]


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


@pytest.mark.parametrize("registry", ["musiceval.data.formats:FORMATS", "musiceval.catalogue.spec:BENCHMARKS"])
def test_a_registry_loads_no_module_above_its_own(registry):
    """A registry imports its builtin modules by name (:class:`musiceval.registry.Registry`), which
    the import checks above do not read: filled, it must still have imported nothing from a tier
    above its own module's. The answer formats once reached the catalogue this way
    (answers -> benchmarks -> catalogue -> musicqa -> answers)."""
    import subprocess

    module, name = registry.split(":")
    code = (f"import sys, {module} as m; m.{name}.names(); "
            "print('\\n'.join(sorted(k for k in sys.modules if k.startswith('musiceval.'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    own = _tier(tuple(module.split(".")[1:]))
    above = [m for m in loaded if (_tier(tuple(m.split(".")[1:])) or 0) > own]
    assert not above, f"filling {registry} imported modules above its tier ({own}): {above}"
