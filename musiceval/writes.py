"""Writing on a disk that may be full or read-only: never a torn file, and one line naming the
path and the fix (docs/hardening.md, "A full disk is one line, never a torn file").

- :func:`cannot_write` is that line: ``cannot write <path>: No space left on device; free space or
  <fix>`` (the ``<fix>`` names the option that moves the file: ``--musiceval-results-dir DIR``,
  ``--per-item FILE``, ``--cache-dir DIR`` ...);
- :func:`append_whole` appends all of its bytes or none (a failed append is cut back);
- :func:`write_whole` writes a file through a temporary sibling renamed into place, so a reader
  sees the old file, or none, or the new one whole;
- :class:`WriteError` carries the line (an ``OSError``: the CLI exits 2 with it, one line).
"""
from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Callable, IO

__all__ = ["WriteError", "append_whole", "cannot_write", "remove_quietly", "replace_whole", "write_whole"]


class WriteError(OSError):
    """A file could not be written (full disk, read-only file system, permission): the message is
    one line naming the file, the cause and the fix."""


#: the causes a user fixes by freeing space (a full disk, a quota reached)
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def cannot_write(path: str | os.PathLike[str], exc: BaseException, fix: str) -> str:
    """``cannot write <path>: <cause>; free space or <fix>`` (``fix``: ``pass --per-item FILE on a
    writable disk``); "free space or" only where the cause is a full disk or quota."""
    cause = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    full = getattr(exc, "errno", None) in DISK_FULL
    return f"cannot write {path}: {cause}; {'free space or ' if full else ''}{fix}"


def remove_quietly(path: str | os.PathLike[str]) -> None:
    """Remove ``path`` if it is there (a temporary or torn file); never raises."""
    try:
        os.unlink(path)
    except OSError:
        pass


def append_whole(path: str | os.PathLike[str], data: bytes, *, fsync: bool = False) -> None:
    """Append ``data`` to ``path`` (created if missing) whole or not at all: when a write fails (a
    full disk) the file is cut back to the size it had, so no torn line is left; the error is raised.
    Unbuffered, so nothing is left to be written later; ``fsync``: flushed to disk before returning."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if fsync:
                os.fsync(fd)
        except OSError:
            try:
                os.ftruncate(fd, size)  # frees what was written: needs no space
            except OSError:
                pass
            raise
    finally:
        os.close(fd)


def write_whole(path: str | os.PathLike[str], fill: Callable[[IO[bytes]], object], *, fix: str) -> None:
    """Write ``path`` through ``.<name>.tmp`` beside it (``fill(fh)`` writes the bytes), flushed to
    disk and renamed into place. On any ``OSError`` the temporary file is removed, ``path`` is left
    as it was, and :class:`WriteError` says ``cannot write <path>: ...; free space or <fix>``."""
    try:
        replace_whole(path, fill)
    except OSError as exc:
        raise WriteError(cannot_write(path, exc, fix)) from None


def replace_whole(path: str | os.PathLike[str], fill: Callable[[IO[bytes]], object]) -> None:
    """:func:`write_whole` for a caller that words the error itself: the ``OSError`` is raised as it
    came, its ``filename`` the file asked for, after the temporary file is removed."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fill(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        remove_quietly(tmp)
        exc.filename = str(target)
        raise
