"""``musiceval init`` run by a musiceval installed in each way PEP 610 records, offline: the wheel of
this checkout from an index-like folder, from inside the repository being set up, from elsewhere,
from a git URL, and from a directory (an editable git checkout with a remote; a plain one). Each
install goes into a fresh virtual environment made ``--without-pip`` that borrows this environment's
site-packages (as tests/test_installed_wheel.py does); ``python -m musiceval init`` there writes the
CI files, whose install line is checked against the table of docs/use-in-your-ci.md.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml
from filelock import FileLock

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
EXTRAS = "musiceval[sentence,bertscore]"
SECRET = "s3cr3tT0ken"
REMOTE = "https://example.invalid/org/musiceval.git"


def _run(cmd: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    # no PYTHONPATH: the installed musiceval, not this checkout (tests/conftest.py points subprocesses here)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.org", PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)
    assert not check or out.returncode == 0, f"{cmd}: exit {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out


def _source(into: Path) -> Path:
    """A copy of what the wheel is built from (the checkout gets no build/ or egg-info)."""
    shutil.copytree(REPO / "musiceval", into / "musiceval", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, into / name)
    (into / ".gitignore").write_text("build/\n*.egg-info/\n__pycache__/\n", encoding="utf-8")
    return into


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The sources and the wheel, built once and shared by the xdist workers (a lock in pytest's
    common temporary folder): ``checkout`` (a git repository with a credentialed remote whose branch
    contains HEAD, as after a push), ``plain`` (no git) and ``wheel``."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "install-origin"
    with FileLock(str(shared) + ".lock"):
        done = shared / "done"
        if not done.exists():
            shutil.rmtree(shared, ignore_errors=True)
            checkout = _source(shared / "checkout")
            _run(["git", "init", "-q", "-b", "main"], checkout)
            _run(["git", "add", "."], checkout)
            _run(["git", "commit", "-q", "-m", "musiceval"], checkout)
            _run(["git", "remote", "add", "origin", REMOTE.replace("https://", f"https://deploy:{SECRET}@")], checkout)
            _run(["git", "update-ref", "refs/remotes/origin/main", "HEAD"], checkout)
            _source(shared / "plain")
            _run([sys.executable, "-m", "pip", "wheel", str(shared / "plain"), "--no-deps", "--no-build-isolation",
                  "--no-index", "-w", str(shared / "dist"), "-q"], shared)
            done.write_text("")
    (wheel,) = (shared / "dist").glob("musiceval-*.whl")
    return {"checkout": shared / "checkout", "plain": shared / "plain", "wheel": wheel}


def _venv(where: Path) -> Path:
    """The python of a fresh venv without pip, lent this environment's site-packages (its pip included)."""
    _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(where)], where.parent)
    python = where / "bin" / "python"
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], where.parent).stdout.strip()
    (Path(site) / "_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return python


def _install(tmp_path: Path, *what: str) -> Path:
    python = _venv(tmp_path / "venv")
    # --ignore-installed: the musiceval this environment lends is neither reused nor touched
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation",
          "--ignore-installed", *what], tmp_path)
    return python


def _init(python: Path, team: Path) -> subprocess.CompletedProcess:
    team.mkdir(parents=True, exist_ok=True)
    return _run([str(python), "-m", "musiceval", "init", str(team)], team)


def _install_steps(team: Path) -> tuple[str, str]:
    github = yaml.safe_load((team / ".github" / "workflows" / "musiceval.yml").read_text(encoding="utf-8"))
    runs = [s["run"] for s in github["jobs"]["release-gates"]["steps"] if "run" in s]
    gitlab = yaml.safe_load((team / ".gitlab" / "musiceval.gitlab-ci.yml").read_text(encoding="utf-8"))
    script = gitlab["musiceval-release-gates"]["script"]
    assert runs[2] == script[2] == "musiceval setup"  # after the install, before the gates
    return runs[1], script[1]


def test_installed_from_an_index_the_ci_pins_the_version(built, tmp_path):
    python = _install(tmp_path, "--find-links", str(built["wheel"].parent), "musiceval")  # by name: no direct_url.json
    out = _init(python, tmp_path / "team")
    assert _install_steps(tmp_path / "team") == (f'pip install "{EXTRAS}==0.1.0"',) * 2
    assert f"install: {EXTRAS}==0.1.0 (from a package index" in out.stdout and "warning" not in out.stderr


def test_a_wheel_committed_to_the_repository_is_installed_from_the_ci_checkout(built, tmp_path):
    team = tmp_path / "team"
    (team / "dist").mkdir(parents=True)
    wheel = shutil.copy(built["wheel"], team / "dist")
    out = _init(_install(tmp_path, str(wheel)), team)
    name = built["wheel"].name
    assert _install_steps(team) == (f'pip install "{EXTRAS} @ file://${{{{ github.workspace }}}}/dist/{name}"',
                                    f'pip install "{EXTRAS} @ file://$CI_PROJECT_DIR/dist/{name}"')
    assert f"(from the file dist/{name} of this repository)" in out.stdout and "warning" not in out.stderr


def test_a_wheel_elsewhere_is_written_as_its_path_and_init_says_how_to_fix_it(built, tmp_path):
    out = _init(_install(tmp_path, str(built["wheel"])), tmp_path / "team")
    assert _install_steps(tmp_path / "team") == (f'pip install "{EXTRAS} @ {built["wheel"].as_uri()}"',) * 2
    assert "cannot reach it" in out.stderr and "commit the wheel into the repository" in out.stderr
    assert "--install" in out.stderr


def test_a_git_install_is_pinned_to_the_commit_installed(built, tmp_path):
    head = _run(["git", "rev-parse", "HEAD"], built["checkout"]).stdout.strip()
    out = _init(_install(tmp_path, f"musiceval @ git+{built['checkout'].as_uri()}@main"), tmp_path / "team")
    expected = f'pip install "{EXTRAS} @ git+{built["checkout"].as_uri()}@{head}"'
    assert _install_steps(tmp_path / "team") == (expected,) * 2  # the commit, not "main"
    assert f"(from git {built['checkout'].as_uri()} at {head[:12]} (installed as main))" in out.stdout
    assert "cannot clone" in out.stderr  # a path on this machine


def test_an_editable_checkout_is_installed_from_its_remote_at_head_without_its_credentials(built, tmp_path):
    checkout = tmp_path / "musiceval"
    _run(["git", "clone", "-q", str(built["checkout"]), str(checkout)], tmp_path)
    _run(["git", "remote", "set-url", "origin", REMOTE.replace("https://", f"https://deploy:{SECRET}@")], checkout)
    _run(["git", "fetch", "-q", str(built["checkout"]), "+refs/heads/main:refs/remotes/origin/main"], checkout)
    head = _run(["git", "rev-parse", "HEAD"], checkout).stdout.strip()
    python = _install(tmp_path, "-e", str(checkout))
    out = _init(python, tmp_path / "team")
    assert _install_steps(tmp_path / "team") == (f'pip install "{EXTRAS} @ git+{REMOTE}@{head}"',) * 2
    assert f"from the git checkout {checkout} (editable), remote origin {REMOTE}, HEAD {head[:12]}" in out.stdout
    written = out.stdout + out.stderr + "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "team").rglob("*.yml"))
    assert SECRET not in written and "credentials" in out.stderr  # left out, and said
    assert "uncommitted" not in out.stderr and "push it" not in out.stderr

    (checkout / "musiceval" / "local_change.py").write_text("", encoding="utf-8")
    _run(["git", "add", "."], checkout)
    _run(["git", "commit", "-q", "-m", "not pushed"], checkout)
    (checkout / "README.md").write_text("edited\n", encoding="utf-8")
    out = _init(python, tmp_path / "team2")
    head = _run(["git", "rev-parse", "HEAD"], checkout).stdout.strip()
    assert _install_steps(tmp_path / "team2")[0] == f'pip install "{EXTRAS} @ git+{REMOTE}@{head}"'
    assert "uncommitted changes" in out.stderr and f"git branch -r --contains {head[:12]}" in out.stderr


def test_a_directory_that_is_no_checkout_is_written_as_its_path_with_a_warning(built, tmp_path):
    plain = shutil.copytree(built["plain"], tmp_path / "plain", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    out = _init(_install(tmp_path, str(plain)), tmp_path / "team")
    assert _install_steps(tmp_path / "team") == (f'pip install "{EXTRAS} @ {plain.as_uri()}"',) * 2
    assert "no git checkout with a remote" in out.stderr


def test_install_overrides_the_origin_and_a_bad_one_is_refused_before_anything_is_written(built, tmp_path):
    python = _install(tmp_path, str(built["wheel"]))
    requirement = f"{EXTRAS} @ git+https://github.com/org/musiceval@v0.1.0"
    out = _run([str(python), "-m", "musiceval", "init", str(tmp_path), "--install", requirement], tmp_path)
    assert _install_steps(tmp_path) == (f'pip install "{requirement}"',) * 2 and "(from --install)" in out.stdout
    (tmp_path / "other").mkdir()
    bad = _run([str(python), "-m", "musiceval", "init", str(tmp_path / "other"), "--install", "musiceval @@ x"],
               tmp_path, check=False)
    assert bad.returncode == 2 and "not a PEP 508 requirement" in bad.stderr
    assert not any((tmp_path / "other").iterdir())
