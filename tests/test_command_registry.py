"""One registry for every subcommand, one ``Registry`` type for every registry: the ``musiceval``
parser is built from :data:`musiceval.commands.registry.COMMANDS`, a command registered by another
module joins it, and a lazy entry (a model adapter that imports torch) is imported only when its
name is looked up."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from musiceval.cli import build_parser, main
from musiceval.commands.registry import BUILTIN, COMMANDS, register_command
from musiceval.registry import Registry

PACKAGE = Path(__file__).resolve().parents[1] / "musiceval"


def test_the_parser_has_exactly_the_registered_commands_in_their_order_whatever_was_imported_first():
    import musiceval.commands.init  # noqa: F401  (imported before the others, as another test may)

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert list(sub.choices) == list(BUILTIN) == [
        "score", "generate", "merge", "rewrite", "mir-live", "init", "setup", "compare", "power", "stability", "cache",
        "data", "run", "report"]
    assert set(COMMANDS.names()) == set(BUILTIN)


def test_every_command_line_lives_in_a_command_module():
    """Arguments are added in musiceval/commands/ only (plus the shared --progress and --cache-dir
    helpers and the top-level parser in cli.py): a protocol's home holds no command (docs/extending.md)."""
    allowed = {"cli.py", "progress.py", "cache_dir.py", "llm/fake_server.py"}
    elsewhere = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                       if "commands" not in p.relative_to(PACKAGE).parts and "add_argument(" in p.read_text(encoding="utf-8"))
    assert set(elsewhere) <= allowed, elsewhere


def test_a_command_registered_elsewhere_joins_the_cli(capsys):
    def configure(parser):
        parser.add_argument("--word", default="hello")

    def run(args):
        print(f"said {args.word}")
        return 3

    register_command("say", help="print a word", configure=configure, run=run)
    try:
        assert main(["say", "--word", "listen"]) == 3
        assert capsys.readouterr().out == "said listen\n"
    finally:
        COMMANDS.unregister("say")
    assert "say" not in COMMANDS.names()


def test_a_lazy_entry_is_imported_only_when_looked_up(tmp_path, monkeypatch):
    (tmp_path / "lazy_entry_mod.py").write_text("from test_registry_target import REG\nREG.register('heavy', 42)\n")
    (tmp_path / "test_registry_target.py").write_text(
        "from musiceval.registry import Registry\nREG = Registry('thing', lazy_modules={'heavy': 'lazy_entry_mod'})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from test_registry_target import REG  # noqa: E402

    assert REG.names() == ["heavy"] and "heavy" in REG and "lazy_entry_mod" not in sys.modules
    assert REG.get("heavy") == 42 and "lazy_entry_mod" in sys.modules
    with pytest.raises(KeyError, match=r"unknown thing 'heavi'; did you mean 'heavy'\? \(registered: heavy\)"):
        REG.get("heavi")


def test_listing_the_model_adapters_imports_no_adapter():
    code = ("import sys\nfrom musiceval.models.base import registered_prefixes\n"
            "names = registered_prefixes()\n"
            "assert {'hf', 'openai-compatible', 'recorded', 'text-only'} <= set(names), names\n"
            "assert 'musiceval.models.hf' not in sys.modules and 'torch' not in sys.modules\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_every_registry_is_one_registry_type():
    from musiceval.data.formats import FORMATS
    from musiceval.encoders.base import ENCODERS
    from musiceval.metrics.choice import MATCHERS
    from musiceval.metrics.registry import METRICS
    from musiceval.models.base import MODELS
    from musiceval.models.families import FAMILIES
    from musiceval.protocols import PROTOCOLS

    registries = (COMMANDS, FORMATS, ENCODERS, MATCHERS, METRICS, MODELS, FAMILIES, PROTOCOLS)
    assert all(isinstance(r, Registry) for r in registries)
    assert "musicflamingo" in FAMILIES.names() and "mmau" in MATCHERS and "clap" in ENCODERS
