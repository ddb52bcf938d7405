"""Unit-test configuration: pytester for the plugin tests, and no files left in the checkout.

Subprocesses (pytester's runs of the plugin, the CLI) import this checkout's ``musiceval``, not
whichever checkout the virtual environment's editable install points at.

Hypothesis keeps its example database (the failing examples it replays first) in
``$HYPOTHESIS_STORAGE_DIRECTORY``, by default the user's cache folder, not ``.hypothesis/`` in the
working directory, so ``pytest tests/`` writes only under pytest's temporary directories.
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] != str(ROOT):
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",
                      str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "musiceval" / "hypothesis"))

pytest_plugins = ["pytester"]
