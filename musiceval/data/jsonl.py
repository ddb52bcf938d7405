"""Line-by-line reading of JSON-lines files in which one bad line is a per-item failure.

:func:`read_json_objects` yields ``(line number, object or ItemFailure)`` for each non-blank
line: a line that is not UTF-8, not JSON (malformed, nested too deeply to parse, an integer too
long to convert), holds a lone UTF-16 surrogate (``"\\ud800"``: not text any encoder can take) or
is not a JSON object becomes an :class:`~musiceval.records.ItemFailure` named ``<file>:<line>``
with the reason, never a crash of the whole file and never a silent drop.

The file is streamed (memory bounded by the longest line, not the file); a UTF-8 byte-order mark
before the first line is accepted; only regular files are read (:func:`check_regular_file`: a
FIFO with no writer would block forever, a directory or device is refused with one line).
"""
from __future__ import annotations

import json
import lzma
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from musiceval.records import ItemFailure

__all__ = ["NotARegularFile", "check_regular_file", "iter_lines", "parse_json_line", "read_json_objects",
           "has_lone_surrogate"]

BOM = b"\xef\xbb\xbf"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|[\ud800-\udfff]")


class NotARegularFile(ValueError):
    """The input path exists but is not a regular file (a FIFO, socket, device or directory)."""


def check_regular_file(path: str | os.PathLike[str], *, what: str = "a file") -> Path:
    """``path`` as a :class:`~pathlib.Path` when it names a regular file (symlinks followed).

    Raises ``FileNotFoundError`` (missing) or :class:`NotARegularFile` (a directory, FIFO, socket
    or device), each naming the path and what was expected, without opening it.
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: file not found; pass the path of {what}") from None
    except OSError as exc:
        raise NotARegularFile(f"{path}: cannot be read ({exc.strerror}); pass the path of {what}") from None
    if stat.S_ISDIR(mode):
        raise NotARegularFile(f"{path}: is a directory; pass the path of {what}")
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device or special file"
        raise NotARegularFile(f"{path}: is {kind}, not a regular file; pass the path of {what}")
    return path


def iter_lines(path: str | os.PathLike[str], *, what: str = "a JSON-lines file") -> Iterator[tuple[int, bytes]]:
    """Stream ``(line number, raw bytes without the line end)`` of a regular file; a UTF-8 BOM
    before the first line is dropped. ``\\n`` and ``\\r\\n`` end lines. An ``.xz`` file is read through
    lzma (a torn one raises ``EOFError`` or ``lzma.LZMAError`` where it breaks off)."""
    path = check_regular_file(path, what=what)
    with (lzma.open(path, "rb") if path.suffix == ".xz" else open(path, "rb")) as fh:
        for number, raw in enumerate(fh, start=1):
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if number == 1 and raw.startswith(BOM):
                raw = raw[len(BOM):]
            yield number, raw


def has_lone_surrogate(obj: Any) -> str | None:
    """The first string (value or key) of a parsed JSON value holding a lone UTF-16 surrogate, or None."""
    stack = [obj]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return value
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return None


def parse_json_line(line: bytes | str) -> Any:
    """Parse one JSON text; raises ``ValueError`` with a one-line reason for anything unusable
    (not UTF-8, malformed, nested too deeply, an over-long integer, a lone surrogate)."""
    if isinstance(line, bytes):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"line is not valid UTF-8 ({exc.reason} at byte {exc.start}); re-encode the file as UTF-8") from None
    else:
        text = line
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"malformed JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise ValueError("malformed JSON: nested too deeply to parse") from None
    except ValueError as exc:  # e.g. an integer over sys.get_int_max_str_digits()
        raise ValueError(f"unusable JSON value: {str(exc).splitlines()[0][:200]}") from None
    if _SURROGATE_ESCAPE.search(text):  # cheap test first: an escaped or raw surrogate anywhere
        bad = has_lone_surrogate(obj)
        if bad is not None:
            raise ValueError(f"text {bad[:40]!r} holds a lone UTF-16 surrogate (e.g. \\ud800), which is not valid "
                             "Unicode; fix the escape in the file")
    return obj


def read_json_objects(path: str | Path, *, what: str = "a JSON-lines file",
                      max_line_bytes: int | None = None) -> Iterator[tuple[int, dict[str, Any] | ItemFailure]]:
    """Yield ``(line_number, parsed object or failure)`` for each non-blank line of ``path``.

    A line longer than ``max_line_bytes`` (a model that looped until cut off) is a failure
    without being parsed. Raises ``FileNotFoundError`` naming ``path`` and ``what`` was expected,
    :class:`NotARegularFile` for a directory or FIFO.
    """
    path = Path(path)
    for number, line in iter_lines(path, what=what):
        if not line.strip():
            continue
        where = f"{path.name}:{number}"
        if max_line_bytes is not None and len(line) > max_line_bytes:
            yield number, ItemFailure(where, f"line of {len(line)} bytes exceeds {max_line_bytes}: looping output?")
            continue
        try:
            obj = parse_json_line(line)
        except ValueError as exc:
            yield number, ItemFailure(where, str(exc))
            continue
        if not isinstance(obj, dict):
            yield number, ItemFailure(where, f"expected a JSON object, got {type(obj).__name__}")
            continue
        yield number, obj
