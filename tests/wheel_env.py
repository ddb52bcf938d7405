"""The wheel of this checkout installed the way a user installs it, into a fresh virtual environment
outside the checkout, offline.

The wheel is built from a copy of the package (the checkout gets no ``build/`` or ``egg-info``).
The environment is made without pip, and a ``.pth`` file lends it the site-packages of the
environment running the tests: the dependencies a user's ``pip install`` would download (torch,
transformers ...) are already there, so pip installs only musiceval itself, from the wheel, and
needs no network. What the lent packages do not bring are their console scripts: ``pip`` and
``pytest`` are written into the environment's ``bin/`` as pip would write them.
"""
from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = next((p / "shared" / "data" for p in Path(__file__).resolve().parents if (p / "shared" / "data").is_dir()),
              REPO.parent / "shared" / "data")

#: the console scripts of lent dependencies that a user's CI file calls: ``script -> distribution``
_SCRIPTS = {"pip": "pip", "pytest": "pytest"}


def run(cmd: list[str] | str, cwd: Path, env: dict[str, str] | None = None, timeout: int = 900,
        shell: bool = False) -> subprocess.CompletedProcess:
    """A command as the user runs it: no PYTHONPATH (the installed wheel, not this checkout, which
    tests/conftest.py points subprocesses at), no pip index (nothing is downloaded)."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NLTK_DATA", "PYTEST_ADDOPTS")}
    base.update({"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env={**base, **(env or {})},
                          shell=shell, executable="/bin/bash" if shell else None)


def build_wheel(work: Path) -> Path:
    """The wheel of this checkout, built from a copy into ``work/dist``."""
    src = work / "src"
    shutil.copytree(REPO / "musiceval", src / "musiceval", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, src / name)
    built = run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-w",
                 str(work / "dist"), "-q"], work)
    assert built.returncode == 0, built.stderr
    (wheel,) = (work / "dist").glob("musiceval-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("musiceval/evals/release_gates.py", "musiceval/evals/audio/manifest.jsonl",
                   "musiceval/vocab/audioset_ontology.json", "musiceval/suite/schema.py"):
        assert needed in names, needed
    assert not any(n.startswith(("fixtures/", "evals/", "tests/")) for n in names)  # the demo stays in the checkout
    return wheel


def fresh_venv(venv: Path) -> Path:
    """A new environment with this one's packages lent (see the module docstring); its ``bin/``."""
    made = run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)], venv.parent)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    site = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], venv.parent).stdout.strip()
    (Path(site) / "_lent_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    for name, dist in _SCRIPTS.items():  # written from the distribution's entry point, as pip writes them
        (entry,) = importlib.metadata.distribution(dist).entry_points.select(group="console_scripts", name=name)
        script = venv / "bin" / name
        script.write_text(f"#!{python}\nimport sys\nfrom {entry.module} import {entry.attr}\n"
                          f"sys.exit({entry.attr}())\n", encoding="utf-8")
        script.chmod(0o755)
    return venv / "bin"


def install(bin_dir: Path, requirement: str) -> None:
    """``pip install REQUIREMENT`` in the environment, as a user types it (dependencies resolved
    against the lent ones: nothing is downloaded)."""
    done = run([str(bin_dir / "pip"), "install", "-q", requirement], bin_dir.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    where = run([str(bin_dir / "python"), "-c", "import musiceval.evals; print(musiceval.evals.__file__)"], bin_dir.parent)
    assert where.stdout.startswith(str(bin_dir.parent)), where.stdout + where.stderr  # the wheel, not this checkout
