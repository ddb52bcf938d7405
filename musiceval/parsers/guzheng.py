"""Guzheng playing-technique events ``[(start, end, technique), ...]`` and their frame matrices.

Frames: 100 per second over a 10 s window, one column per technique in :data:`TECHNIQUES` order.

CMI-Bench rule (:func:`frames_cmi`): take the text from the first "[" to the last "]", read it as a
Python literal (the toolkit ``eval``s it; here :func:`ast.literal_eval`), accept tuples or dicts
with ``start``/``end``/``technique``; map times with ``t % 10``; a single "No Tech" event is an
empty matrix; frame ``int(start*100)`` to ``int(end*100)`` (exclusive) of the technique is set.
An event crossing a window edge (9.76 -> 10.43 becomes 9.76 -> 0.43) sets no frame. Where the
toolkit's code raises (no brackets, an unknown technique, "No Technique"), it crashes the whole
run; :func:`frames_cmi` returns ``None`` and the scorer counts an empty prediction.

Default rule (:func:`parse_events` + :func:`events_to_frames`): literal or, failing that, a regex
over ``(start, end, 'technique')`` tuples (so a list cut off mid-way keeps its complete tuples);
techniques matched after normalisation; "No Tech"/"No Technique" events mean no technique; times
are shifted by the window start ``10 * floor(median(start) / 10)`` and clipped to the window, so
an event crossing the window edge keeps its in-window part.
"""
from __future__ import annotations

import ast
import math
import re

import numpy as np

from musiceval.parsers import ParseError
from musiceval.parsers.labels import normalise_cmi

TECHNIQUES = ("Vibrato", "Point Note", "Upward Portamento", "Downward Portamento", "Plucks", "Glissando", "Tremolo")
FPS = 100
WINDOW_S = 10.0
_NORM = {normalise_cmi(t): t for t in TECHNIQUES}
_NO_TECH = {"notech", "notechnique", "none"}
Event = tuple[float, float, str]


def _literal_list(text: str) -> object:
    lo, hi = text.find("["), text.rfind("]")
    if lo < 0 or hi < lo:
        raise ParseError("no [...] list")
    return ast.literal_eval(text[lo : hi + 1])


def frames_cmi(text: str) -> np.ndarray | None:
    """The toolkit's ``convert_to_frame_labels``; ``None`` where the toolkit's code raised."""
    try:
        events = ast.literal_eval(text[text.find("[") : text.rfind("]")] + "]")
        if isinstance(events, list) and isinstance(events[0], dict):
            events = [(float(e["start"]), float(e["end"]), e["technique"]) for e in events]
        elif isinstance(events, list) and all(isinstance(e, tuple) and len(e) == 3 for e in events):
            events = [(float(e[0]), float(e[1]), str(e[2])) for e in events]
        events = [(s % 10, e % 10, normalise_cmi(lab)) for s, e, lab in events]
        frames = np.zeros((int(np.ceil(WINDOW_S * FPS)), len(TECHNIQUES)))
        if len(events) == 1 and events[0][-1] == "notech":
            return frames
        classes = [normalise_cmi(t) for t in TECHNIQUES]
        for s, e, lab in events:
            frames[int(float(s) * FPS) : int(float(e) * FPS), classes.index(lab)] = 1
        return frames
    except (ValueError, SyntaxError, TypeError, KeyError, IndexError, AttributeError, MemoryError, RecursionError):
        return None


_TUPLE = re.compile(r"\(\s*['\"]?(\d+(?:\.\d+)?)['\"]?\s*,\s*['\"]?(\d+(?:\.\d+)?)['\"]?\s*,\s*['\"]([^'\"]{1,40})['\"]\s*\)")


def _technique(label: object) -> str | None:
    key = normalise_cmi(str(label))
    if key in _NO_TECH:
        return None
    if key not in _NORM:
        raise ParseError(f"unknown technique {str(label)[:40]!r}")
    return _NORM[key]


def parse_events(text: str) -> list[Event]:
    """Technique events named in ``text`` ("No Tech" events dropped).

    >>> parse_events('"[(\\'5.5\\', \\'6.0\\', \\'Upward Portamento\\')]"')
    [(5.5, 6.0, 'Upward Portamento')]

    Raises
    ------
    ParseError
        When no event list can be read or a technique is unknown.
    """
    raw: list[tuple[object, object, object]] = []
    try:
        items = _literal_list(text)
        if not isinstance(items, (list, tuple)):
            raise ParseError("not a list")
        for it in items:
            if isinstance(it, dict):
                raw.append((it["start"], it["end"], it["technique"]))
            elif isinstance(it, (list, tuple)) and len(it) == 3:
                raw.append(tuple(it))  # type: ignore[arg-type]
            else:
                raise ParseError(f"not a (start, end, technique) entry: {str(it)[:60]}")
    except (ParseError, ValueError, SyntaxError, TypeError, KeyError, MemoryError, RecursionError):
        raw = [m.groups() for m in _TUPLE.finditer(text)]
        if not raw:
            raise ParseError("no (start, end, technique) tuples") from None
    events: list[Event] = []
    for s, e, lab in raw:
        tech = _technique(lab)
        try:
            start, end = float(s), float(e)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            if tech is None:
                continue  # the prompt's own "('start_time', 'end_time', 'No Tech')" example
            raise ParseError(f"non-numeric time in {(s, e)!r}") from None
        if tech is not None and math.isfinite(start) and math.isfinite(end):
            events.append((start, end, tech))
    return events


def events_to_frames(events: list[Event], *, offset: float | None = None) -> np.ndarray:
    """Frame matrix (1000 x 7) of ``events`` relative to the window starting at ``offset``.

    ``offset`` defaults to ``10 * floor(median(start) / 10)``.
    """
    frames = np.zeros((int(WINDOW_S * FPS), len(TECHNIQUES)), dtype=bool)
    if not events:
        return frames
    if offset is None:
        offset = WINDOW_S * math.floor(float(np.median([s for s, _, _ in events])) / WINDOW_S)
    for s, e, tech in events:
        lo = int(round(min(max(s - offset, 0.0), WINDOW_S) * FPS))
        hi = int(round(min(max(e - offset, 0.0), WINDOW_S) * FPS))
        frames[lo:hi, TECHNIQUES.index(tech)] = True
    return frames
