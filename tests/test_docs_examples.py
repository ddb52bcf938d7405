"""Every ```bash and ```python block of README.md and docs/*.md runs as written.

How a block runs:

- in a fresh working directory that links the repository's top-level folders (``fixtures``,
  ``evals``, ``scripts``, ...), so relative paths work and outputs never land in the checkout;
- ``python`` blocks: as a script (``python block.py``) with the checkout on ``PYTHONPATH``;
- ``bash`` blocks: command by command (``\\`` continuations joined, ``  # comments`` dropped);
  ``musiceval``, ``pytest`` and ``python`` run with this interpreter; each must exit 0.

Placeholders, replaced by shipped files (write examples with these):

- ``FILE`` -> the shipped answers of the command's protocol (:data:`FILES`);
- ``hf:DIR`` -> a tiny random Qwen2-Audio checkpoint built for the test (CPU, seconds);
- ``<run>`` and any ``.musiceval/results/NAME`` -> a small finished run created there.

A block preceded by a line ``<!-- not-run: reason -->`` is not run (the reason is shown as the
skip reason); keep that to commands that need a GPU, a network, a key or minutes.
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
LINKED = ("fixtures", "evals", "scripts", "benchmarks", "docs", "conftest.py", "pyproject.toml", "README.md")

#: ``FILE`` per command (the first words of the command after ``musiceval``)
FILES = {
    ("score", "choice"): "fixtures/choice/dev_midashenglm.jsonl",
    ("score", "freeform"): "fixtures/freeform/musicqa_dev_midashenglm.jsonl",
    ("score", "factual"): "fixtures/factual/nsynth_midashenglm.jsonl",
    ("score", "mir"): "fixtures/mir/outputs/mullama/mullama_GS_key.jsonl",
    ("rewrite",): "fixtures/freeform/musicqa_dev_midashenglm.jsonl",
}

#: blocks of today's README that fail as written, keyed by their exact text: strict xfail, so an
#: entry goes stale (XPASS fails) once the block is fixed, and an edited block simply runs
KNOWN_BROKEN: dict[str, str] = {}
#: blocks that need a ``<!-- not-run: reason -->`` line in the README (the integrator adds it);
#: test_pending_markers_are_current fails once the marker is there, so the entry is removed
PENDING_MARKERS: dict[str, str] = {}

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
        if lang in ("bash", "python"):
            out.append(Block(path, start + 1, lang, "\n".join(lines[start + 1:end]), marker.group("reason") if marker else None))
        k = end + 1
    return out


ALL = [b for p in DOCS if p.is_file() for b in blocks(p)]


def commands(text: str) -> list[str]:
    """Shell commands of a bash block: continuations joined, comments and blank lines dropped."""
    joined = re.sub(r"\s*\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            out.append(line)
    return out


def _file_for(argv: list[str]) -> str:
    for key, file in FILES.items():
        if argv[1:1 + len(key)] == list(key):
            return file
    raise AssertionError(f"no shipped file for FILE in {' '.join(argv)!r}; add it to FILES in {__file__}")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    work = tmp_path_factory.mktemp("docs-examples")
    for name in LINKED:
        if (ROOT / name).exists():
            (work / name).symlink_to(ROOT / name)
    return work


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from musiceval.models.qwen2audio import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-qwen2-audio"))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env


def _make_runs(text: str, work: Path) -> str:
    """Create a finished run at every results directory the text names; returns the text."""
    from tests.report_run import make_run

    text = text.replace("<run>", "example-run")
    for rel in set(re.findall(r"\.musiceval/results/[A-Za-z0-9._-]+", text)):
        if not (work / rel / "results.json").is_file():
            make_run(work / rel)
    return text


def _run(argv: list[str], work: Path, what: str, timeout: int = 600) -> None:
    proc = subprocess.run(argv, cwd=work, env=_env(), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (f"{what}\nexit {proc.returncode}\nstdout: {proc.stdout[-1500:]}\n"
                                  f"stderr: {proc.stderr[-3000:]}")


@pytest.mark.slow
@pytest.mark.parametrize("block", [pytest.param(b, id=b.id, marks=[pytest.mark.xfail(
    strict=True, reason=KNOWN_BROKEN[b.text])] if b.text in KNOWN_BROKEN else []) for b in ALL])
def test_code_block_runs(block: Block, workdir: Path, request):
    if block.not_run or block.text in PENDING_MARKERS:
        pytest.skip(f"not run ({block.id}): {block.not_run or PENDING_MARKERS[block.text]}")
    text = _make_runs(block.text, workdir)
    if block.lang == "python":
        script = workdir / f"block_{block.line}.py"
        script.write_text(text + "\n", encoding="utf-8")
        _run([sys.executable, str(script)], workdir, f"{block.id}: python block failed")
        return
    for command in commands(text):
        argv = shlex.split(command)
        if "hf:DIR" in argv or any(a.startswith("hf:DIR") for a in argv):
            model = request.getfixturevalue("tiny_model")
            argv = [a.replace("hf:DIR", f"hf:{model}") for a in argv]
        if "FILE" in argv:
            argv = [_file_for(argv) if a == "FILE" else a for a in argv]
        head = {"musiceval": [sys.executable, "-m", "musiceval.cli"], "pytest": [sys.executable, "-m", "pytest"],
                "python": [sys.executable], "python3": [sys.executable]}.get(argv[0])
        _run((head + argv[1:]) if head else ["bash", "-c", shlex.join(argv)], workdir, f"{block.id}: `{command}` failed")


def test_blocks_are_found_and_markers_parsed(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("text\n<!-- not-run: needs a GPU -->\n\n```bash\nmusiceval a \\\n  --b c  # note\n```\n"
                  "```python\nprint(1)\n```\n```text\nignored\n```\n", encoding="utf-8")
    found = blocks(md)
    assert [(b.lang, b.not_run) for b in found] == [("bash", "needs a GPU"), ("python", None)]
    assert commands(found[0].text) == ["musiceval a --b c"]
    assert len([b for b in ALL if b.path.name == "README.md"]) >= 4  # the README's examples are collected


def test_pending_markers_are_current():
    unmarked = {b.text for b in ALL if not b.not_run}
    stale = [text.splitlines()[0] for text in PENDING_MARKERS if text not in unmarked]
    assert not stale, f"these blocks have their not-run marker now (or changed): remove them from PENDING_MARKERS: {stale}"
