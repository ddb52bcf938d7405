"""``scripts/install_browser.sh`` installs a system package only when asked: ``--yes``, or ``y`` typed
at its question on a terminal; run without a terminal and without ``--yes`` it installs nothing and
exits 1 naming the flag. ``apt-get`` and ``sudo`` are stand-ins here that record their calls."""
from __future__ import annotations

import os
import pty
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "install_browser.sh"

pytestmark = pytest.mark.skipif(shutil.which("chromium") is not None or Path("/usr/bin/chromium").exists(),
                                reason="Chromium is installed here: the script stops before asking")


@pytest.fixture
def fake_apt(tmp_path):
    """A PATH whose apt-get and sudo only write their arguments to ``calls``."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    (bin_dir / "apt-get").write_text(f'#!/bin/sh\necho "apt-get $*" >> "{calls}"\n')
    (bin_dir / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    for tool in ("apt-get", "sudo"):
        (bin_dir / tool).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "CHROMIUM"}
    env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
    return env, calls


def run(env, *args, stdin=subprocess.DEVNULL):
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, stdin=stdin, capture_output=True, text=True, timeout=60)


def test_without_a_terminal_and_without_yes_nothing_is_installed(fake_apt):
    env, calls = fake_apt
    res = run(env)
    assert res.returncode == 1 and not calls.exists()
    assert res.stderr.strip().splitlines()[-1] == ("install_browser: not run from a terminal, so it cannot ask; "
                                                   "pass --yes to install chromium without asking")


def test_yes_installs_without_asking(fake_apt):
    env, calls = fake_apt
    res = run(env, "--yes")
    assert res.returncode == 0, res.stderr
    assert calls.read_text().splitlines() == ["apt-get update -qq", "apt-get install -y -qq chromium"]


@pytest.mark.parametrize("answer,installed", [(b"y\n", True), (b"n\n", False), (b"\n", False)])
def test_on_a_terminal_it_asks_and_installs_only_on_yes(fake_apt, answer, installed):
    env, calls = fake_apt
    main, replica = pty.openpty()
    try:
        os.write(main, answer)  # typed ahead: the terminal keeps it until the script reads
        res = run(env, stdin=replica)
    finally:
        os.close(main)
        os.close(replica)
    assert "install chromium now? [y/N]" in res.stderr
    assert res.returncode == (0 if installed else 1), res.stderr
    assert calls.exists() is installed
    if not installed:
        assert "nothing installed (pass --yes to install without asking)" in res.stdout


def test_an_unknown_argument_is_named(fake_apt):
    env, calls = fake_apt
    res = run(env, "--yse")
    assert res.returncode == 2 and "unknown argument '--yse'" in res.stderr and not calls.exists()
