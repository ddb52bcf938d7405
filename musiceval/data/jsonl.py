"""Line-by-line reading of JSON-lines files in which one bad line is a per-item failure.

:func:`read_json_objects` yields ``(line number, object or ItemFailure)`` for each non-blank
line: a line that is not UTF-8, not JSON (or nested too deeply to parse) or not a JSON object
becomes an :class:`~musiceval.records.ItemFailure` named ``<file>:<line>`` with the reason,
never a crash of the whole file and never a silent drop.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from musiceval.records import ItemFailure


def read_json_objects(path: str | Path, *, what: str = "a JSON-lines file",
                      max_line_bytes: int | None = None) -> Iterator[tuple[int, dict[str, Any] | ItemFailure]]:
    """Yield ``(line_number, parsed object or failure)`` for each non-blank line of ``path``.

    A line longer than ``max_line_bytes`` (a model that looped until cut off) is a failure
    without being parsed. Raises ``FileNotFoundError`` naming ``path`` and ``what`` was expected.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: file not found; pass the path of {what}") from None
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path.name}:{number}"
        if max_line_bytes is not None and len(line) > max_line_bytes:
            yield number, ItemFailure(where, f"line of {len(line)} bytes exceeds {max_line_bytes}: looping output?")
            continue
        try:
            obj = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            yield number, ItemFailure(where, f"line is not valid UTF-8 ({exc.reason} at byte {exc.start}); re-encode the file as UTF-8")
            continue
        except json.JSONDecodeError as exc:
            yield number, ItemFailure(where, f"malformed JSON: {exc.msg} at column {exc.colno}")
            continue
        except RecursionError:
            yield number, ItemFailure(where, "malformed JSON: nested too deeply to parse")
            continue
        if not isinstance(obj, dict):
            yield number, ItemFailure(where, f"expected a JSON object, got {type(obj).__name__}")
            continue
        yield number, obj
