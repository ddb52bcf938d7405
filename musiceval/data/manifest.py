"""The JSON-lines manifest of a dataset (``--dataset``): one question per line, read into
:class:`~musiceval.records.Item` records; a bad line is a counted failure with its reason, a file
that cannot be read as a whole is a :class:`ManifestError`.

Fields: ``id``, ``question`` (or ``prompt``/``instruction``), ``audio`` (or ``audio_path``; a list
gives its first path), ``audio_start``/``audio_end`` (seconds), ``reference`` (or ``output``),
``labels``, ``choices``, ``answer``, ``group``, ``meta``; other fields join ``meta``.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from musiceval.data.jsonl import NotARegularFile, check_regular_file, iter_lines, parse_json_line
from musiceval.records import Item, ItemFailure

_ITEM_FIELDS = {"id", "question", "prompt", "instruction", "audio", "audio_path", "audio_start",
                "audio_end", "reference", "output", "labels", "choices", "answer", "group", "meta"}


class ManifestError(ValueError):
    """The manifest file as a whole is unusable (missing, not JSON lines)."""


def _as_tuple(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    return (str(value),)


def _window(row: dict) -> dict[str, float] | None:
    """``audio_start`` / ``audio_end`` in seconds (None when not numbers); a negative end
    (CMI-Bench writes -1) means the end of the file and is dropped."""
    try:
        window = {k: float(row[k]) for k in ("audio_start", "audio_end") if row.get(k) is not None}
    except (TypeError, ValueError, OverflowError):
        return None
    if not all(math.isfinite(v) for v in window.values()) or window.get("audio_start", 0.0) < 0:
        return None
    if window.get("audio_end", 0.0) < 0:
        del window["audio_end"]
    return window


def load_manifest(path: str | Path) -> tuple[list[Item], list[ItemFailure]]:
    """Read a JSON-lines manifest into :class:`Item` records; bad lines become failures."""
    path = Path(path)
    try:
        check_regular_file(path, what="a JSON-lines manifest (--dataset)")
    except (FileNotFoundError, NotARegularFile) as exc:
        raise ManifestError(f"manifest {exc}") from None
    items: list[Item] = []
    failures: list[ItemFailure] = []
    seen: set[str] = set()
    for no, line in iter_lines(path, what="a JSON-lines manifest (--dataset)"):  # streamed; a BOM is accepted
        if not line.strip():
            continue
        where = f"{path.name}:{no}"
        try:  # not UTF-8, malformed, too deep, over-long integer, lone surrogate: this line fails
            row = parse_json_line(line)
            if not isinstance(row, dict):
                raise ValueError(f"got {type(row).__name__}")
        except ValueError as exc:
            failures.append(ItemFailure(where, f"{where}: not a JSON object ({exc})"))
            continue
        item_id = str(row.get("id", "")).strip() or where
        question = row.get("question") or row.get("prompt") or row.get("instruction")
        audio = row.get("audio") if row.get("audio") is not None else row.get("audio_path")
        if isinstance(audio, list):
            audio = audio[0] if audio else None
        problem, window = None, _window(row)
        if window is None:
            problem = "fields 'audio_start'/'audio_end' must be numbers (finite seconds, start >= 0)"
        elif not isinstance(question, str) or not question.strip():
            problem = "field 'question' (or 'prompt'/'instruction') is missing or empty"
        elif item_id in seen:
            problem = f"duplicate id {item_id!r}"
        elif audio is not None and not isinstance(audio, str):
            problem = "field 'audio' must be a path string"
        if problem:
            failures.append(ItemFailure(item_id, f"{where}: {problem}"))
            continue
        seen.add(item_id)
        meta = dict(row.get("meta") or {})
        meta.update({k: v for k, v in row.items() if k not in _ITEM_FIELDS})
        meta.update(window)
        items.append(Item(
            id=item_id, question=question, audio=audio,
            reference=row.get("reference", row.get("output")),
            labels=_as_tuple(row.get("labels")), choices=_as_tuple(row.get("choices")),
            answer=None if row.get("answer") is None else str(row["answer"]),
            group=None if row.get("group") is None else str(row["group"]), meta=meta,
        ))
    return items, failures
