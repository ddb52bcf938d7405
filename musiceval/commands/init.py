"""``musiceval init [DIR] [--answers FOLDER] [--model NAME] [--install REQUIREMENT]``: set up a repository to gate its model.

Writes, never over a file that exists (each one is reported as written or kept):

- ``musiceval.toml``: the suite config, commented, declaring the model with one ``[[model.answers]]``
  entry per answer file found in ``--answers`` (the format and protocol detected from each file's
  content, a directory of CMI-Bench outputs as one ``dir``); the file also collects the gates, so
  ``pytest`` in the repository runs them;
- ``evals/test_musiceval.py``: the entry module, for ``pytest evals/ -n 4`` beside the team's own
  evals (it imports :mod:`musiceval.evals.release_gates`; the gates themselves stay in the package);
- ``.github/workflows/musiceval.yml`` (GitHub Actions) and ``.gitlab/musiceval.gitlab-ci.yml``
  (GitLab CI, to ``include:``): install musiceval the way it is installed here, ``musiceval setup``,
  run the gates, keep the results and the JUnit file.

A repository whose suite config is a ``[tool.musiceval]`` table in pyproject.toml keeps it: init
writes no musiceval.toml (the plugin would read it first and the table would be ignored), says so,
and prints the ``[[tool.musiceval.model.answers]]`` entries it found for the user to add. A symbolic
link at any file init writes, or at a folder on its way (dangling or not), stops init with one line
before anything is written; files are created exclusively, never through a link.

The CI files install the musiceval ``init`` runs from (:mod:`musiceval.commands.install_origin`: the
package index's version, the git commit, the wheel in the repository ...; ``--install REQUIREMENT``
names it instead), and ``init`` prints the line and where it came from. For an index install they are the
files docs/use-in-your-ci.md shows, whose table lists the line for every other origin
(``tests/test_init.py`` checks both and runs the gate command the workflow runs).
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
from pathlib import Path

from musiceval.commands.registry import register_command
from musiceval.commands.install_origin import GITHUB_ROOT, GITLAB_ROOT, Install, detect, from_requirement

ENTRY_MODULE = '''"""The musiceval release gates (installed with the package: ``musiceval.evals``), run on the model(s)
the suite config declares. ``musiceval init`` writes this same file into a team's repository."""
from musiceval.evals.release_gates import *  # noqa: F401,F403
'''

#: the command every CI file runs (the README's gate command, with the artefacts CI keeps)
GATE_COMMAND = "pytest evals/ -n 4 --junitxml=musiceval-results/junit.xml --musiceval-results-dir musiceval-results"

#: the line that installs CPU torch first, so that musiceval's dependencies never pull CUDA wheels on a CPU runner
TORCH_INSTALL = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"


def install_command(requirement: str) -> str:
    """``pip install "<requirement>"``: double quotes, so that the CI's shell expands ``$CI_PROJECT_DIR``
    and ``${VAR}`` references; single quotes when the requirement holds a double quote (a marker)."""
    if any(c in requirement for c in '"\\`'):
        return "pip install " + shlex.quote(requirement)
    return f'pip install "{requirement}"'


def _yaml(command: str) -> str:
    """``command`` as a YAML scalar: plain (as the docs show it) unless YAML would read it otherwise."""
    if ": " in command or " #" in command or command.endswith(":") or command[:1] in "!&*{}[]|>'\"%@`,?:-#":
        return "'" + command.replace("'", "''") + "'"
    return command


def github_workflow(install: Install) -> str:
    """``.github/workflows/musiceval.yml`` for ``install`` (docs/use-in-your-ci.md)."""
    return f'''# musiceval release gates: written by `musiceval init` (docs/use-in-your-ci.md)
name: musiceval
on:
  push:
  pull_request:
jobs:
  release-gates:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      # CPU torch first, so that musiceval's dependencies never pull CUDA wheels on a CPU runner
      - run: {TORCH_INSTALL}
      - run: {_yaml(install_command(install.line(GITHUB_ROOT)))}
      - run: musiceval setup
      - run: {GATE_COMMAND}
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: musiceval-results
          path: musiceval-results
'''


def gitlab_ci(install: Install) -> str:
    """``.gitlab/musiceval.gitlab-ci.yml`` for ``install`` (docs/use-in-your-ci.md)."""
    return f'''# musiceval release gates: written by `musiceval init` (docs/use-in-your-ci.md);
# add `include: {{local: .gitlab/musiceval.gitlab-ci.yml}}` to .gitlab-ci.yml
musiceval-release-gates:
  image: python:3.11
  script:
    - {TORCH_INSTALL}
    - {_yaml(install_command(install.line(GITLAB_ROOT)))}
    - musiceval setup
    - {GATE_COMMAND}
  artifacts:
    when: always
    paths:
      - musiceval-results
    reports:
      junit: musiceval-results/junit.xml
'''


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", nargs="?", default=".", type=Path, help="the repository (default: .)")
    parser.add_argument("--answers", type=Path, default=None, metavar="FOLDER",
                        help="a folder of answer files to declare (formats detected from their content)")
    parser.add_argument("--model", default="my-model", help="the name of the model under test (default my-model)")
    parser.add_argument("--install", default=None, metavar="REQUIREMENT",
                        help="the PEP 508 requirement the CI files install musiceval with, e.g. "
                             "'musiceval[sentence,bertscore] @ git+https://github.com/ORG/musiceval@v0.1.0' "
                             "(default: how this musiceval was installed; docs/use-in-your-ci.md)")


def run(args: argparse.Namespace) -> int:
    from musiceval.data.errors import InputError

    root: Path = args.directory
    if not root.is_dir():
        raise InputError(f"{root}: not a directory; pass the repository to set up")
    if not re.fullmatch(r"[^/\[\]*?\n\"]{1,80}", args.model):
        raise InputError(f"--model {args.model!r}: a short name without '/', '[', ']', '*', '?' or quotes")
    answers = detect_answers(args.answers, root) if args.answers is not None else []
    install = from_requirement(args.install) if args.install is not None else detect(root)
    ci_files = {
        root / ".github" / "workflows" / "musiceval.yml": github_workflow(install),
        root / ".gitlab" / "musiceval.gitlab-ci.yml": gitlab_ci(install),
    }
    files = {
        root / "musiceval.toml": suite_config(args.model, answers),
        root / "evals" / "test_musiceval.py": ENTRY_MODULE,
        **ci_files,
    }
    for path in files:  # before anything is written: a link anywhere is one line, and nothing changes
        refuse_links(path, root)
    in_force = config_in_force(root)
    wrote_ci = False
    for path, text in files.items():
        if path.name == "musiceval.toml" and in_force is not None:
            say_kept_table(in_force, path, answers)
            continue
        if not write_new(path, text):
            print(f"kept     {path} (exists; not overwritten)")
            continue
        print(f"wrote    {path}")
        wrote_ci = wrote_ci or path in ci_files
    if wrote_ci:
        print(f"install: {install.line(GITHUB_ROOT)} (from {install.origin})")
        for warning in install.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    skipped = [a for a in answers if a[1] is None]
    for path, _, why in skipped:
        print(f"not an answer file: {path} ({why})", file=sys.stderr)
    print("next: pytest evals/ -n 4   (the verdict is the last line)")
    return 0


def refuse_links(path: Path, root: Path) -> None:
    """Refuse (one line) a symbolic link at ``path`` or at a folder between ``root`` and it, dangling
    or not: init never writes through a link (a link's target may lie outside the repository)."""
    from musiceval.data.errors import InputError

    parts = path.relative_to(root).parts
    for depth in range(len(parts), 0, -1):  # the file, then each folder above it inside ``root``
        where = root.joinpath(*parts[:depth])
        if where.is_symlink():
            raise InputError(f"{where}: a symbolic link (to {os.readlink(where)}); musiceval init never writes through "
                             "a link: remove it, or write the file yourself")


def config_in_force(root: Path) -> Path | None:
    """The pyproject.toml whose ``[tool.musiceval]`` table is the suite config the plugin reads in
    ``root`` (:func:`musiceval.suite.config.find_config`) when there is no musiceval.toml; None
    otherwise. An unreadable pyproject.toml raises the ``ConfigError`` that names it."""
    from musiceval.suite.config import CONFIG_FILE, find_config

    if os.path.lexists(root / CONFIG_FILE):
        return None  # kept as it is
    path, _ = find_config(None, root)
    return path if path is not None and path.name == "pyproject.toml" else None


def say_kept_table(pyproject: Path, skipped: Path, answers: list[tuple[Path, dict | None, str]]) -> None:
    """What init did not write beside a ``[tool.musiceval]`` table, and the entries to add there."""
    print(f"kept     {pyproject} ([tool.musiceval] is the suite config in force)")
    print(f"not written {skipped}: it would shadow [tool.musiceval] in pyproject.toml (musiceval.toml is read first)")
    found = [entry for _, entry, _ in answers if entry is not None]
    if found:
        print("add these answers to pyproject.toml yourself:")
        for entry in found:
            print("  [[tool.musiceval.model.answers]]")
            for k, v in entry.items():
                print(f"  {k} = {_toml(str(v))}")


def write_new(path: Path, text: str) -> bool:
    """Create ``path`` holding ``text``; False when something is there already. The file is created
    exclusively and never through a link (``O_EXCL | O_NOFOLLOW``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return True


def detect_answers(folder: Path, root: Path) -> list[tuple[Path, dict | None, str]]:
    """``(path, answers entry or None, why not)`` for every file and CMI-Bench directory in ``folder``."""
    from musiceval.data.errors import InputError
    from musiceval.data.formats import FormatError, detect_format

    if not folder.is_dir():
        raise InputError(f"--answers {folder}: not a directory; pass the folder holding the model's answer files")
    out: list[tuple[Path, dict | None, str]] = []
    for path in sorted(folder.iterdir()):
        rel = _relative(path, root)
        if path.is_dir():
            if any(p.suffix in (".json", ".jsonl") for p in path.iterdir()):
                out.append((path, {"protocol": "mir", "dir": rel}, ""))
            continue
        if path.suffix not in (".json", ".jsonl", ".csv"):
            continue
        try:
            fmt = detect_format(path)
        except (FormatError, OSError, ValueError) as exc:
            out.append((path, None, str(exc).split(";")[0]))
            continue
        out.append((path, {"protocol": fmt.protocols[0], "file": rel, "format": fmt.name}, ""))
    return out


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def _toml(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def suite_config(model: str, answers: list[tuple[Path, dict | None, str]]) -> str:
    """The commented starter ``musiceval.toml``."""
    lines = [
        "# musiceval suite config: the model under test, its answers, thresholds and check rules.",
        "# Every key is validated when pytest starts (docs/gate-your-model.md lists them). Run the gates with",
        "#   pytest evals/ -n 4        (or plain `pytest` here: this file collects them too)",
        "",
        "[[model]]",
        f"name = {_toml(model)}",
        '# live = "hf:/path/to/checkpoint"      # or a live spec: the live gates ask the model itself',
        "",
    ]
    found = [entry for _, entry, _ in answers if entry is not None]
    for entry in found:
        lines.append("[[model.answers]]")
        lines += [f"{k} = {_toml(str(v))}" for k, v in entry.items()]
        lines.append("")
    if not found:
        lines += [
            "# one [[model.answers]] per answer file, in the benchmarks' own layouts (detected from the content):",
            "# [[model.answers]]",
            '# protocol = "choice"                 # choice | factual | freeform | mir',
            '# file = "runs/muchomusic.jsonl"      # a mir directory of <model>_<task>.jsonl files: dir = "..."',
            "",
        ]
    lines += [
        "[defaults]",
        "# coverage gate: the share of the benchmark's items the answers must cover (1.0: all of them)",
        "min_coverage = 1.0",
        "",
        "# [release]",
        '# required = ["*/beats_chance/*", "*/listens/*"]   # the gates a release needs (default: all)',
        "# a required gate that did not run (no weights, data or key) makes the verdict INCONCLUSIVE, unless allowed:",
        "# [release.allow_skip]",
        '# "freeform/*/clap_*" = "no CLAP weights on the CI runner"   # the verdict line repeats the reason',
        "",
        "# [baseline]",
        '# results = "results/v1"                          # the previous release\'s results dir: regression gates',
        "",
    ]
    return "\n".join(lines)


register_command("init", help="set up a repository to gate its model: musiceval.toml, evals/, CI files",
                 configure=configure, run=run)
