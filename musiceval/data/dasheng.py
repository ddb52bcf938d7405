"""The dasheng-lm recorded-response layout: one JSON object per line, one model answer each.

Upstream (xiaomi-research/dasheng-lm, ``evaluate/jsonl``) writes, per line::

    {"dataset_name": "NSynth", "audio": "bass_synthetic_068-049-025.wav", "label": ["bass"],
     "prompt": "What's the music instrument?", "model_output": "bass", "model_name": "MiDashengLM"}

Other tasks use the same frame with other fields (MusicQA: ``question``/``answer``; MuChoMusic:
``choices``/``answer``). :func:`load_dasheng_jsonl` is generic: the caller names the fields it
needs, every other field goes to ``Item.meta``. Each bad line is an :class:`ItemFailure` with the
line number and reason (invalid JSON or UTF-8, a missing or mistyped field, an over-long line, a
second answer to an item already answered); only a missing or unreadable file raises.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from musiceval.data.jsonl import check_regular_file, iter_lines, parse_json_line
from musiceval.records import Item, ItemFailure, Response

#: lines longer than this are reported as failures instead of parsed (looping model outputs)
MAX_LINE_BYTES = 1_000_000


@dataclass(frozen=True)
class RecordedSet:
    """Items and their recorded responses (same order), plus the lines that could not be read."""

    items: tuple[Item, ...]
    responses: tuple[Response, ...]
    failures: tuple[ItemFailure, ...]
    #: the ``model_name`` of every readable record, a second answer to an item included
    models: tuple[str, ...] = ()


def _labels(value, field: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ValueError(f"field {field!r} must be a string or a list of strings, got {type(value).__name__}")


def load_dasheng_jsonl(
    path: str | Path,
    *,
    labels_field: str | None = "label",
    text_field: str = "model_output",
    prompt_field: str = "prompt",
    id_field: str = "audio",
    required: Sequence[str] = (),
    condition: str = "correct",
) -> RecordedSet:
    """Read a dasheng-layout JSONL file of recorded responses.

    Parameters
    ----------
    labels_field : str or None
        Field with the ground-truth label(s) (a string or a list); None for tasks without labels.
    text_field, prompt_field, id_field : str
        The model's answer, the prompt it saw, and the item id (the audio file name). An item is
        a clip and its prompt: the same clip asked another prompt is another item (its id gets
        ``#2``, ``#3`` ... and keeps the clip's id as its group); the same clip and prompt again is
        a second answer to one item, that line's failure (counted once, never as another item).
    required : sequence of str
        Further fields every line must have.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"recorded responses {str(path)!r} not found; pass an existing dasheng-layout JSONL file")
    check_regular_file(path, what="a dasheng-layout JSONL file")
    items: list[Item] = []
    responses: list[Response] = []
    failures: list[ItemFailure] = []
    seen: dict[str, int] = {}
    first_line: dict[tuple[str, str], int] = {}  # (clip id, prompt) -> the line that answered it
    models: list[str] = []
    for lineno, raw in iter_lines(path, what="a dasheng-layout JSONL file"):  # streamed
        where = f"{path.name}:{lineno}"
        if len(raw) > MAX_LINE_BYTES:
            failures.append(ItemFailure(where, f"line longer than {MAX_LINE_BYTES} bytes"))
            continue
        if not raw.strip():
            continue
        try:
            rec = parse_json_line(raw.decode("utf-8"))  # malformed, too deep, huge int, lone surrogate
            if not isinstance(rec, dict):
                raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
            missing = [f for f in (text_field, id_field, *([labels_field] if labels_field else []), *required) if f not in rec]
            if missing:
                raise ValueError(f"missing field(s) {missing}")
            text, rid = rec[text_field], rec[id_field]
            if not isinstance(text, str):
                raise ValueError(f"field {text_field!r} must be a string, got {type(text).__name__}")
            if not isinstance(rid, (str, int)) or str(rid) == "":
                raise ValueError(f"field {id_field!r} must be a non-empty string")
            labels = _labels(rec[labels_field], labels_field) if labels_field else ()
            prompt = rec.get(prompt_field, "")
            if not isinstance(prompt, str):
                raise ValueError(f"field {prompt_field!r} must be a string")
        except UnicodeDecodeError as exc:
            failures.append(ItemFailure(where, f"not UTF-8 ({exc.reason} at byte {exc.start})"))
            continue
        except (json.JSONDecodeError, ValueError) as exc:
            failures.append(ItemFailure(where, f"bad record: {exc}"))
            continue
        base = str(rid)
        models.append(str(rec.get("model_name") or ""))
        if (base, prompt) in first_line:
            failures.append(ItemFailure(where, f"answers item {base!r} again (line {first_line[base, prompt]} answered "
                                               "the same clip and prompt): one answer per item; split the file per "
                                               "model or run"))
            continue
        first_line[base, prompt] = lineno
        seen[base] = seen.get(base, 0) + 1
        item_id = base if seen[base] == 1 else f"{base}#{seen[base]}"
        meta = {k: v for k, v in rec.items() if k not in (text_field, labels_field, prompt_field)}
        meta["line"] = lineno
        items.append(Item(id=item_id, question=prompt, audio=str(rec.get("audio")) if rec.get("audio") else None,
                          labels=labels, group=base, meta=meta))
        responses.append(Response(item_id=item_id, condition=condition, model=str(rec.get("model_name", "")),
                                  prompt=prompt, text=text, meta={"line": lineno}))
    return RecordedSet(tuple(items), tuple(responses), tuple(failures), tuple(models))
