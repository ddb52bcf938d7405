"""The documentation site builds offline with `mkdocs build --strict`, and a broken link fails it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL = "pip install 'mkdocs>=1.6' 'mkdocs-material>=9.5'  (the dev extra)"


def _build(project: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(project / "mkdocs.yml"),
                           "-d", str(site)], capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(autouse=True)
def _mkdocs():
    pytest.importorskip("mkdocs", reason=f"mkdocs not installed: {INSTALL}")
    pytest.importorskip("material", reason=f"mkdocs-material not installed: {INSTALL}")


def test_site_builds_strict_offline(tmp_path):
    proc = _build(ROOT, tmp_path / "site")
    assert proc.returncode == 0, proc.stderr[-3000:]
    for page in ("index.html", "protocols/freeform/index.html", "protocols/mir/index.html", "cli/index.html",
                 "report/index.html", "performance/index.html", "cmi-bench/index.html"):
        assert (tmp_path / "site" / page).is_file(), page


def test_a_broken_link_fails_the_build(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(ROOT / "docs", project / "docs")
    shutil.copy(ROOT / "mkdocs.yml", project / "mkdocs.yml")
    index = project / "docs" / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + "\nSee [the missing page](no-such-page.md).\n", encoding="utf-8")
    proc = _build(project, tmp_path / "site")
    assert proc.returncode != 0 and "no-such-page.md" in proc.stderr


def test_cli_reference_is_current():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "cli_reference.py"), "--check"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
