"""Every ```bash and ```python block of README.md and docs/*.md runs as written, as a user pastes it.

How a block runs:

- in a fresh working directory per Markdown file that links the repository's top-level folders
  (``fixtures``, ``evals``, ``scripts``, ...), so relative paths work and outputs never land in the
  checkout; the blocks of one file run in order in that directory (on one xdist worker), so a
  block may use what an earlier block of its file made, as a reader following the page would;
- ``python`` blocks: as a script (``python block.py``) with the checkout on ``PYTHONPATH``;
- ``bash`` blocks: command by command (``\\`` continuations joined, ``  # comments`` dropped);
  ``musiceval``, ``pytest`` and ``python`` run with this interpreter (what ``. .venv/bin/activate``
  gives a reader); each must exit 0. Nothing in a command is substituted: examples name real files.

A block preceded by a line ``<!-- not-run: reason -->`` is not run (the reason is shown as the
skip reason); keep that to commands that need a GPU, a network, a key or minutes. Its commands,
those of ``console`` blocks (``$ ...`` lines) and the ``run:`` steps of ``yaml`` CI examples are
still checked against the parsers: every ``musiceval`` command must parse, and every long option
of a ``pytest`` command must be one pytest knows here (the musiceval plugin's included).
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
LINKED = ("fixtures", "evals", "musiceval", "scripts", "benchmarks", "docs", "conftest.py", "pyproject.toml", "README.md")

_FENCE = re.compile(r"^```(\w+)\s*$")
_NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(?P<reason>.+?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    text: str
    not_run: str | None

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The bash/python fenced blocks of one Markdown file, with their not-run marker."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out, k = [], 0
    while k < len(lines):
        m = _FENCE.match(lines[k])
        if not m:
            k += 1
            continue
        start, lang = k, m.group(1)
        end = next((j for j in range(k + 1, len(lines)) if lines[j].startswith("```")), len(lines))
        prev = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = _NOT_RUN.match(prev.strip())
        if lang in ("bash", "python", "console", "yaml"):
            out.append(Block(path, start + 1, lang, "\n".join(lines[start + 1:end]), marker.group("reason") if marker else None))
        k = end + 1
    return out


ALL = [b for p in DOCS if p.is_file() for b in blocks(p)]
RUNNABLE = [b for b in ALL if b.lang in ("bash", "python")]


def commands(text: str) -> list[str]:
    """Shell commands of a bash block: continuations joined, comments and blank lines dropped."""
    joined = re.sub(r"\s*\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            out.append(line)
    return out


@pytest.fixture(scope="module")
def workdirs(tmp_path_factory):
    """One working directory per Markdown file, linking the repository's top-level folders."""
    made: dict[Path, Path] = {}

    def get(path: Path) -> Path:
        if path not in made:
            work = made[path] = tmp_path_factory.mktemp("docs-examples")
            for name in LINKED:
                if (ROOT / name).exists():
                    (work / name).symlink_to(ROOT / name)
        return made[path]

    return get


@pytest.fixture(scope="module")
def reader_cache(tmp_path_factory) -> Path:
    """One cache folder for every block, as a reader has one (the platform cache folder), empty at
    the start of the session and shared by the xdist workers; never the user's own cache."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "docs-reader-cache"


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("HF_HUB_OFFLINE", "1")
    env["MUSICEVAL_CACHE"] = str(cache)
    return env


def _run(argv: list[str], work: Path, cache: Path, what: str, timeout: int = 600) -> None:
    proc = subprocess.run(argv, cwd=work, env=_env(cache), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (f"{what}\nexit {proc.returncode}\nstdout: {proc.stdout[-1500:]}\n"
                                  f"stderr: {proc.stderr[-3000:]}")


@pytest.mark.slow
@pytest.mark.parametrize("block", [pytest.param(b, id=b.id, marks=pytest.mark.xdist_group(f"docs:{b.path.name}"))
                                   for b in RUNNABLE])
def test_code_block_runs(block: Block, workdirs, reader_cache):
    if block.not_run:
        pytest.skip(f"not run ({block.id}): {block.not_run}")
    work = workdirs(block.path)
    if block.lang == "python":
        script = work / f"block_{block.line}.py"
        script.write_text(block.text + "\n", encoding="utf-8")
        _run([sys.executable, str(script)], work, reader_cache, f"{block.id}: python block failed")
        return
    for command in commands(block.text):
        argv = shlex.split(command)
        head = {"musiceval": [sys.executable, "-m", "musiceval.cli"], "pytest": [sys.executable, "-m", "pytest"],
                "python": [sys.executable], "python3": [sys.executable]}.get(argv[0])
        _run((head + argv[1:]) if head else ["bash", "-c", shlex.join(argv)], work, reader_cache, f"{block.id}: `{command}` failed")


def shell_commands(block: Block) -> list[str]:
    """The shell commands a block shows: a bash block's lines, a console block's ``$ `` lines, the
    ``run:`` steps of a YAML workflow."""
    if block.lang == "bash":
        return commands(block.text)
    if block.lang == "console":
        return [line[2:] for line in commands(block.text) if line.startswith("$ ")]
    if block.lang == "yaml":
        import yaml

        def runs(node):
            if isinstance(node, dict):
                for key, value in node.items():
                    if key == "run" and isinstance(value, str):
                        yield value
                    else:
                        yield from runs(value)
            elif isinstance(node, list):
                for value in node:
                    yield from runs(value)

        return [c for script in runs(yaml.safe_load(block.text)) for c in commands(script)]
    return []


def _pytest_options(config: pytest.Config) -> set[str]:
    # every option of this session's plugins, musiceval's included (pytest's private parser: no public list)
    parser = config._parser.optparser
    return {o for o in parser._option_string_actions if o.startswith("--")}


CHECKED = [b for b in ALL if b.lang in ("bash", "console", "yaml")]


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id) for b in CHECKED])
def test_commands_use_options_that_exist(block: Block, request):
    """Run or not, a documented ``musiceval`` command parses and a ``pytest`` command uses real
    options (``--model`` for ``--musiceval-model`` is refused by pytest)."""
    from musiceval.cli import build_parser

    known = _pytest_options(request.config)
    for command in shell_commands(block):
        argv = shlex.split(command.replace("${", "{"))  # shell variables stay single words
        if argv[:1] == ["musiceval"]:
            try:
                build_parser().parse_args(argv[1:])
            except SystemExit as exc:
                assert exc.code == 0, f"{block.id}: `{command}` does not parse (see stderr)"
        elif argv[:1] == ["pytest"]:
            unknown = [a.split("=", 1)[0] for a in argv[1:] if a.startswith("--") and a.split("=", 1)[0] not in known]
            assert not unknown, f"{block.id}: `{command}`: pytest has no option {', '.join(unknown)} (see pytest --help)"


def test_blocks_are_found_and_markers_parsed(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("text\n<!-- not-run: needs a GPU -->\n\n```bash\nmusiceval a \\\n  --b c  # note\n```\n"
                  "```python\nprint(1)\n```\n```text\nignored\n```\n", encoding="utf-8")
    found = blocks(md)
    assert [(b.lang, b.not_run) for b in found] == [("bash", "needs a GPU"), ("python", None)]
    assert commands(found[0].text) == ["musiceval a --b c"]
    md.write_text("```console\n$ musiceval power r --drop 0.02\nto detect a drop\n```\n```yaml\njobs:\n  e:\n    steps:\n"
                  "      - run: |\n          pytest evals/ \\\n            --musiceval-model x\n          musiceval report r\n```\n",
                  encoding="utf-8")
    console, workflow = blocks(md)
    assert shell_commands(console) == ["musiceval power r --drop 0.02"]
    assert shell_commands(workflow) == ["pytest evals/ --musiceval-model x", "musiceval report r"]
    assert len([b for b in ALL if b.path.name == "README.md"]) >= 4  # the README's examples are collected
