"""Song-structure answers: ``[(start, end, label), ...]`` lists of sections (SongFormBench).

One reading in every mode, the toolkit's (``parse_song_structure_segments`` and its helpers in
``evaluate.py`` at nicolaus625/CMI-bench@35235cb), restated here:

1. the whole answer, then its span from the first "[" to the last "]", read as a Python literal; a
   list (or a dict's ``segments`` / ``labels`` list) of ``(start, end[, label])`` tuples or of
   ``{start|start_time|onset, end|end_time|offset, label|section|type}`` objects gives the sections
   (a string element is read again by this rule);
2. else every ``start, end, label`` triple written in the text ("(0.0, 12.5, intro)"), else every
   ``start, end`` pair (label "unknown"), else every "[a - b] label" range, else every "a - b" range.

Times are seconds as numbers or text ("12.5", "12.5s", "1:05" = 65 s); a section whose end is not
after its start is dropped. Labels map to :data:`SONG_SECTIONS` ("pre
chorus" -> "pre-chorus", "refrain" and "post-chorus" -> "chorus", "interlude" and "instrumental" ->
"inst", a known label inside a longer one: "Chorus 2" -> "chorus"), anything else to "unknown".

Where this differs from the toolkit (docs/cmi-bench.md): a time that is not finite ("inf", "nan")
drops its section (the toolkit's scores then raise and it scores the item 0), and a literal nested
too deeply to read is not read (the toolkit stops).
"""
from __future__ import annotations

import ast
import math
import re
from typing import Any

import numpy as np

#: Section labels of SongFormBench answers: the instruction's list (``data/songformer/sft_songformer.py``
#: at 35235cb); every other label maps to one of these or to "unknown".
SONG_SECTIONS: tuple[str, ...] = ("intro", "verse", "pre-chorus", "chorus", "bridge", "inst", "outro", "silence")
Section = tuple[float, float, str]

_ALIASES = {"pre chorus": "pre-chorus", "prechorus": "pre-chorus", "post chorus": "chorus", "postchorus": "chorus",
            "post-chorus": "chorus", "refrain": "chorus", "instrumental": "inst", "interlude": "inst",
            "instrumental break": "inst", "silent": "silence"}
#: the toolkit's search order: "pre-chorus" before "chorus"
_SEARCH_ORDER = ("pre-chorus", "chorus", "verse", "bridge", "intro", "outro", "inst", "silence")
_KNOWN = [(name, re.compile(rf"(^|[^a-z]){re.escape(name)}([^a-z]|$)")) for name in _SEARCH_ORDER]
_TIME = r"([0-9][0-9:.]*\s*s?)"
_Q = r"['\"]?"
_TRIPLE = re.compile(rf"\(?\s*{_Q}{_TIME}{_Q}\s*,\s*{_Q}{_TIME}{_Q}\s*,\s*{_Q}([^'\"\)\]\n,]+){_Q}\s*\)?")
_PAIR = re.compile(rf"\(?\s*{_Q}{_TIME}{_Q}\s*,\s*{_Q}{_TIME}{_Q}\s*\)?")
_BRACKETED = re.compile(rf"[\[\(]\s*{_TIME}\s*-\s*{_TIME}\s*[\]\)]\s*([^,\n\]\)]+)?", re.IGNORECASE)
_BARE = re.compile(rf"{_Q}\s*{_TIME}\s*-\s*{_TIME}\s*{_Q}", re.IGNORECASE)
_UNREADABLE = (SyntaxError, ValueError, TypeError, RecursionError, MemoryError)


def seconds(value: Any) -> float | None:
    """A time in seconds: a number, or text such as "12.5", "12.5 sec", "1:05"; None when unreadable.

    >>> seconds("1:05"), seconds("12.5s"), seconds("soon")
    (65.0, 12.5, None)
    """
    if isinstance(value, (int, float)):
        out = float(value)
    else:
        text = str(value).strip().lower()
        for unit in ("seconds", "second", "secs", "sec"):
            text = text.replace(unit, "")
        text = text.strip()
        if text.endswith("s"):
            text = text[:-1].strip()
        if ":" in text:
            try:
                out = sum(float(part) * 60 ** k for k, part in enumerate(reversed(text.split(":"))))
            except ValueError:
                return None
        else:
            found = re.search(r"-?\d+(?:\.\d+)?", text)
            if not found:
                return None
            out = float(found.group(0))
    return out if math.isfinite(out) else None


def section_label(label: Any) -> str:
    """A section label mapped to :data:`SONG_SECTIONS`, else "unknown"."""
    text = re.sub(r"\s+", " ", str(label).strip().lower()).replace("_", "-").strip(" .,:;")
    if text in _ALIASES:
        return _ALIASES[text]
    for name, pattern in _KNOWN:
        if pattern.search(text):
            return name
    return "unknown"


def _from_literal(raw: Any) -> list[Section]:
    if isinstance(raw, dict):
        raw = raw.get("segments", raw.get("labels", []))
    if not isinstance(raw, list):
        return []
    out: list[Section] = []
    for item in raw:
        if isinstance(item, str):
            out.extend(read_sections(item))
            continue
        if isinstance(item, dict):
            start = item.get("start", item.get("start_time", item.get("onset")))
            end = item.get("end", item.get("end_time", item.get("offset")))
            label = item.get("label", item.get("section", item.get("type")))
        elif isinstance(item, (list, tuple)) and len(item) >= 2:
            start, end, label = item[0], item[1], item[2] if len(item) >= 3 else "unknown"
        else:
            continue
        s, e = seconds(start), seconds(end)
        if s is None or e is None or e <= s or label is None:
            continue
        out.append((s, e, section_label(label)))
    return sorted(out, key=lambda sec: (sec[0], sec[1]))


def _from_pattern(text: str, pattern: re.Pattern[str], labelled: bool) -> list[Section]:
    out = []
    for m in pattern.finditer(text):
        s, e = seconds(m.group(1)), seconds(m.group(2))
        label = section_label(m.group(3) or "unknown") if labelled else "unknown"
        if s is not None and e is not None and e > s:
            out.append((s, e, label))
    return sorted(out, key=lambda sec: (sec[0], sec[1]))


def read_sections(text: Any) -> list[Section]:
    """The sections of an answer, sorted by start then end; [] when none can be read (module docstring).

    >>> read_sections("[('0.0', '12.5', 'Intro'), ('12.5', '40', 'Verse 1')]")
    [(0.0, 12.5, 'intro'), (12.5, 40.0, 'verse')]
    >>> read_sections("0:00 - 0:15 intro, then 0:15-1:00")
    [(0.0, 15.0, 'unknown'), (15.0, 60.0, 'unknown')]
    """
    if isinstance(text, list):
        return _from_literal(text)
    if not isinstance(text, str):
        return []
    text = text.strip()
    candidates = [text]
    first, last = text.find("["), text.rfind("]")
    if first != -1 and last > first:
        candidates.append(text[first:last + 1])
    for candidate in candidates:
        try:
            found = _from_literal(ast.literal_eval(candidate))
        except _UNREADABLE:
            continue
        if found:
            return found
    for pattern, labelled in ((_TRIPLE, True), (_PAIR, False), (_BRACKETED, True), (_BARE, False)):
        found = _from_pattern(text, pattern, labelled)
        if found:
            return found
    return []


def to_intervals(sections: list[Section], start: float | None = None, end: float | None = None
                 ) -> tuple[np.ndarray, list[str]]:
    """Contiguous ``(intervals, labels)`` from ``sections`` (the toolkit's
    ``segments_to_intervals_and_labels``): from ``start`` (default: the first section's start) to
    ``end`` when given, sections clipped to that span, an overlap cut at the earlier section's end,
    and every gap an "unknown" interval."""
    intervals: list[list[float]] = []
    labels: list[str] = []
    cursor = start if start is not None else sections[0][0]
    for s, e, label in sections:
        if start is not None:
            s = max(s, start)
        if end is not None:
            e = min(e, end)
        if e <= cursor:
            continue
        if s > cursor:
            intervals.append([cursor, s])
            labels.append("unknown")
        s = max(s, cursor)
        if e > s:
            intervals.append([s, e])
            labels.append(label)
            cursor = e
    if end is not None and cursor < end:
        intervals.append([cursor, end])
        labels.append("unknown")
    return np.asarray(intervals, dtype=float).reshape(-1, 2), labels
