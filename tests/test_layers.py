"""Data flows one way (DESIGN.md): the lower layers, up to the evaluation engines (``scoring``) and
the protocols that wrap them, never import a layer above them, not even lazily inside a function. Every ``import musiceval...`` of their modules is checked, so a new
upward import fails here with the module, line and target."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "musiceval"

# what each lower layer may import besides itself (top-level names under musiceval)
BASE = {"records", "schemas", "registry", "cmibench_vocab", "ranges", "exclusions"}
ALLOWED = {
    "parsers": set(),
    "extraction": set(),
    "stats": {"records"},
    "data": BASE | {"extraction"},
    "encoders": BASE | {"data"},
    "metrics": BASE | {"encoders", "parsers", "stats"},
}
# the evaluation engines, below the protocols that wrap them, below the commands that call those
ALLOWED["scoring"] = BASE | set(ALLOWED) | {"cache_dir", "conditions", "generate", "llm", "models", "progress"}
ALLOWED["protocols"] = ALLOWED["scoring"] | {"scoring"}


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


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_lower_layer_imports_nothing_above_it(layer):
    upward = [f"musiceval/{path.relative_to(PACKAGE)}:{line} imports musiceval.{target}"
              for path in sorted((PACKAGE / layer).rglob("*.py"))
              for line, target in _imports(path) if target != layer and target not in ALLOWED[layer] | {"__init__"}]
    assert not upward, "imports back up the layers:\n" + "\n".join(upward)


def test_the_checker_sees_lazy_imports_inside_functions(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from musiceval.scoring.factual import score_factual\n"
                      "    from musiceval import commands, records\n", encoding="utf-8")
    assert list(_imports(module)) == [(2, "scoring"), (3, "commands"), (3, "records")]
