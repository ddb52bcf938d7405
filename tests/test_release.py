"""The package is release-ready (docs/releasing.md): the release workflow publishes only a tag that
names the package version, by trusted publishing; the CI builds and checks the sdist and the wheel
(scripts/build_dist.sh, scripts/check_dist.py) and keeps them out of git.
"""
from __future__ import annotations

import importlib.util
import io
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
_spec = importlib.util.spec_from_file_location("check_dist", ROOT / "scripts" / "check_dist.py")
check_dist = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_dist)


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _step(workflow: dict, job: str, contains: str) -> dict:
    (step,) = [s for s in workflow["jobs"][job]["steps"] if contains in str(s.get("run", s.get("uses", "")))]
    return step


def test_the_release_runs_on_a_version_tag_only(workflow):
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads the key `on` as true
    assert on == {"push": {"tags": ["v*"]}}
    assert workflow["permissions"] == {"contents": "read"}  # each job asks for what it needs


def test_pypi_is_published_by_trusted_publishing_after_the_checked_build(workflow):
    jobs = workflow["jobs"]
    assert "bash scripts/build_dist.sh" in [s.get("run") for s in jobs["build"]["steps"]]
    pypi = jobs["pypi"]
    assert pypi["needs"] == "build" and pypi["permissions"] == {"id-token": "write"}
    assert pypi["environment"]["name"] == "pypi"
    publish = _step(workflow, "pypi", "pypa/gh-action-pypi-publish")
    assert publish["uses"].startswith("pypa/gh-action-pypi-publish@") and not publish.get("with")  # no token
    release = jobs["github-release"]
    assert release["needs"] == "pypi" and release["permissions"] == {"contents": "write"}
    assert re.search(r"gh release create \"\$GITHUB_REF_NAME\" dist/\*", _step(workflow, "github-release", "gh release")["run"])


def _bash(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])  # `python` is this one
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PATH": path, **env})


@pytest.mark.parametrize("tag, section, ok", [
    ("v1.2.3", "## [1.2.3] - 2026-12-01", True),
    ("v1.2.4", "## [1.2.3] - 2026-12-01", False),
    ("1.2.3", "## [1.2.3] - 2026-12-01", False),
    ("v1.2.3", "## [1.2.3-dev.1]", False),
], ids=["matches", "other-version", "no-v", "no-changelog-section"])
def test_the_version_check_refuses_a_tag_that_is_not_the_package_version(workflow, tmp_path, tag, section, ok):
    check = _step(workflow, "build", "GITHUB_REF_NAME")["run"]
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "musiceval"\nversion = "1.2.3"\n', encoding="utf-8")
    (tmp_path / "CHANGELOG.md").write_text(f"# Changelog\n\n## [Unreleased]\n\n{section}\n\n- a change\n", encoding="utf-8")
    out = _bash(check, tmp_path, GITHUB_REF_NAME=tag)
    assert (out.returncode == 0) == ok, out.stdout + out.stderr
    if not ok:
        assert out.stdout.startswith("::error::") and "docs/releasing.md" in out.stdout


def test_the_release_notes_are_the_changelog_section_of_the_version(workflow, tmp_path):
    script = _step(workflow, "github-release", "gh release")["run"]
    notes = "\n".join(line for line in script.splitlines() if not line.strip().startswith("gh "))
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## [Unreleased]\n\n- next\n\n## [1.2.3] - 2026-12-01\n\n"
                                           "### Added\n- this one\n\n## [1.2.3-dev.1]\n\n- older\n", encoding="utf-8")
    assert _bash(notes, tmp_path, GITHUB_REF_NAME="v1.2.3").returncode == 0
    assert (tmp_path / "notes.md").read_text(encoding="utf-8").strip() == "### Added\n- this one"


def test_the_ci_builds_and_checks_the_package_and_git_ignores_it():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[-3:] == ["bash scripts/test.sh", "bash scripts/evals.sh", "bash scripts/build_dist.sh"]
    script = (ROOT / "scripts" / "build_dist.sh").read_text(encoding="utf-8")
    assert "twine check --strict dist/*" in script and "scripts/check_dist.py dist/" in script
    ignored = subprocess.run(["git", "check-ignore", "dist/x.whl", "build/lib/x.py", "musiceval.egg-info/PKG-INFO"],
                             cwd=ROOT, capture_output=True, text=True)
    if ignored.returncode == 128:
        pytest.skip("not a git checkout")
    assert ignored.stdout.split() == ["dist/x.whl", "build/lib/x.py", "musiceval.egg-info/PKG-INFO"]


def _dist(tmp_path: Path, version: str = "1.2.3", wheel_files=(), sdist_files=()) -> Path:
    dist = tmp_path / "dist"
    dist.mkdir()
    with zipfile.ZipFile(dist / f"musiceval-{version}-py3-none-any.whl", "w") as whl:
        for name in (*check_dist.WHEEL_NEEDS, *wheel_files):
            whl.writestr(name, "")
    with tarfile.open(dist / f"musiceval-{version}.tar.gz", "w:gz") as tar:
        for name in (*check_dist.SDIST_NEEDS, *sdist_files):
            tar.addfile(tarfile.TarInfo(f"musiceval-{version}/{name}"), io.BytesIO(b""))
    return dist


def test_check_dist_passes_a_complete_pair(tmp_path):
    assert check_dist.problems(_dist(tmp_path), "1.2.3") == []


@pytest.mark.parametrize("kw, version, says", [
    ({"wheel_files": ["tests/test_x.py"]}, "1.2.3", "holds tests/test_x.py"),
    ({"wheel_files": ["fixtures/a.jsonl"]}, "1.2.3", "holds fixtures/a.jsonl"),
    ({}, "1.2.4", "not version 1.2.4"),
], ids=["tests", "fixtures", "version"])
def test_check_dist_names_each_problem_and_its_fix(tmp_path, kw, version, says):
    found = check_dist.problems(_dist(tmp_path, **kw), version)
    assert found and any(says in line for line in found), found


def test_check_dist_names_a_file_the_gates_need_that_the_wheel_lacks(tmp_path, monkeypatch):
    dist = _dist(tmp_path)
    monkeypatch.setattr(check_dist, "WHEEL_NEEDS", (*check_dist.WHEEL_NEEDS, "musiceval/evals/missing.json"))
    (line,) = check_dist.problems(dist, "1.2.3")
    assert "lacks musiceval/evals/missing.json" in line and "package-data" in line


def test_check_dist_wants_exactly_one_sdist_and_one_wheel(tmp_path):
    dist = _dist(tmp_path)
    (dist / "musiceval-1.2.2-py3-none-any.whl").write_bytes(b"")
    (line,) = check_dist.problems(dist, "1.2.3")
    assert "expected one of each" in line and "build_dist.sh" in line
