"""A real small disk for the full-disk tests: a size-limited tmpfs mounted for one test.

``small_disk(size)`` mounts ``tmpfs -o size=<size>`` on a fresh folder under the test's tmp_path and
unmounts it at teardown. Mounting needs root (CAP_SYS_ADMIN) on Linux: elsewhere the test is
skipped with that reason. tmpfs counts whole 4 KiB pages, so a size is a number of pages.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def _why_not() -> str | None:
    if not sys.platform.startswith("linux"):
        return f"a tmpfs cannot be mounted on {sys.platform}"
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "no mount/umount command"
    return None


@pytest.fixture
def small_disk(tmp_path: Path):
    """``mount(size, name="disk") -> Path``: a fresh tmpfs of ``size`` (``"40k"``, ``"4m"``)."""
    mounted: list[Path] = []

    def mount(size: str, name: str = "disk") -> Path:
        why = _why_not()
        if why is not None:
            pytest.skip(f"the full-disk tests mount a {size} tmpfs: {why}")
        path = tmp_path / name
        path.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a {size} tmpfs here ({done.stderr.strip() or 'permission denied'})")
        mounted.append(path)
        return path

    yield mount
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(disk: Path, leave: int = 0) -> Path:
    """Fill ``disk`` with a file until it is full, then give back ``leave`` bytes (whole pages)."""
    filler = disk / "filler"
    block = b"\0" * 4096
    with open(filler, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(block)
        except OSError:
            pass
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler
