"""Progress bars of the ``musiceval`` commands: tqdm on stderr only (stdout stays the result).

The mode is set once per command from ``--progress`` / ``--no-progress`` (:func:`set_mode`):
forced on, forced off, or (the default) on only when stderr is a terminal, so logs and pipes
get no carriage-return noise and ``--json`` output is never touched. Code that draws its own bars
(tqdm in the data catalogue, ``huggingface_hub``'s downloads) asks :func:`enabled` first.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

_mode: bool | None = None


def set_mode(mode: bool | None) -> None:
    """``True``: always show bars; ``False``: never; ``None``: when stderr is a terminal."""
    global _mode
    _mode = mode


def enabled() -> bool:
    if _mode is not None:
        return _mode
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def bar(total: int | None = None, *, desc: str = "", unit: str = "item", **kwargs: Any):
    """A tqdm bar on stderr (items/s and ETA), disabled unless :func:`enabled`."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not enabled(), dynamic_ncols=True,
                mininterval=0.2, **kwargs)


def add_progress_arguments(parser: argparse.ArgumentParser, *, top_level: bool = False) -> None:
    """``--progress`` / ``--no-progress`` (dest ``progress``: True, False or None = auto).

    On sub-commands the default is suppressed so that a flag given before the sub-command stays."""
    default = None if top_level else argparse.SUPPRESS
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--progress", dest="progress", action="store_true", default=default,
                       help="show progress bars on stderr even when stderr is not a terminal")
    group.add_argument("--no-progress", dest="progress", action="store_false", default=default,
                       help="never show progress bars")
