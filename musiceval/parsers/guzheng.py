"""Guzheng playing-technique events ``[(start, end, technique), ...]`` and their frame matrices.

Frames: 100 per second over a 10 s window, one column per technique in :data:`TECHNIQUES` order.

CMI-Bench rule (:func:`frames_cmi`; nicolaus625/CMI-bench ``evaluate.py`` at
commit 35235cb, ``convert_to_frame_labels``): only the *first tuple* is read (the text from the first
"[" to the first ")", plus ")]"; a leading ``["[`` loses its first two characters), as a Python
literal (the toolkit ``eval``s it; here :func:`ast.literal_eval`); tuples whose start does not
begin with a digit are dropped; an answer without "[" before a ")", an unreadable literal, an
empty list or non-string times all become "No Tech" (an empty matrix); start times map with
``t % 10``, end times with ``(t - 1e-4) % 10 + 1e-4`` (so an event ending at 10.0 keeps its
frames); frames ``int(start*100)`` to ``int(end*100)`` (exclusive); an unknown technique sets no
frame. Dict entries (``start``/``end``/``technique``) raise in the toolkit when a key is missing
or a time is not a number: :func:`frames_cmi` returns ``None`` there.

The toolkit's older rule (:func:`frames_cmi_2cafca5`, ``evaluate.py`` at commit 2cafca5): the
text from the first "[" to the last "]", ``t % 10`` for start and end (an event crossing the
window edge, 9.76 -> 10.43 becoming 9.76 -> 0.43, and any event ending at 10.0 set no frame); a
single "No Tech" event is an empty matrix; no brackets, an unknown technique or "No Technique"
raise (``None`` here).

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


def frames_cmi_2cafca5(text: str) -> np.ndarray | None:
    """The toolkit's ``convert_to_frame_labels`` at commit 2cafca5; ``None`` where it raised."""
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


_NO_TECH_EVENT = [("0", "10", "No Tech")]


def frames_cmi_explained(text: str) -> tuple[np.ndarray | None, str | None]:
    """:func:`frames_cmi` and, where the toolkit fell back to "No Tech" for want of a readable
    first tuple (or raised), the reason; ``(frames, None)`` when the answer was read."""
    why: str | None = None
    lo, hi = text.find("["), text.find(")")
    if lo == -1 or lo >= hi:
        events: object = list(_NO_TECH_EVENT)
        why = "no '[' before a ')'"
    else:
        first = text[lo:hi] + ")]"
        if first.startswith('["['):
            first = first[2:]
        try:
            events = ast.literal_eval(first)
        except Exception:  # the toolkit's bare except around eval()
            events, why = list(_NO_TECH_EVENT), "first tuple unreadable"
    try:
        if len(events) == 0:  # type: ignore[arg-type]
            events, why = list(_NO_TECH_EVENT), "empty list"
        if isinstance(events, list) and isinstance(events[0], dict):
            events = [(float(e["start"]), float(e["end"]), e["technique"]) for e in events]
        elif isinstance(events, list) and all(isinstance(e, tuple) and len(e) == 3 for e in events):
            try:
                events = [(float(e[0]), float(e[1]), str(e[2])) for e in events if e[0][0].isdigit()]
                if not events:
                    events, why = [(0, 10, "No Tech")], why or "no tuple with a numeric start"
            except Exception:
                events, why = [(0, 10, "No Tech")], why or "times are not strings"
        try:
            events = [(s % 10, (e - 1e-4) % 10 + 1e-4, normalise_cmi(lab)) for s, e, lab in events]  # type: ignore[operator, union-attr, misc]
        except Exception:
            events, why = [(0, 10, "notech")], why or "not (start, end, technique) entries"
        frames = np.zeros((int(np.ceil(WINDOW_S * FPS)), len(TECHNIQUES)))
        if len(events) == 1 and normalise_cmi(events[0][-1]) == "notech":
            return frames, why
        classes = [normalise_cmi(t) for t in TECHNIQUES]
        for s, e, lab in events:
            start_frame, end_frame = int(float(s) * FPS), int(float(e) * FPS)
            if normalise_cmi(lab) in classes:
                frames[start_frame:end_frame, classes.index(normalise_cmi(lab))] = 1
        return frames, why
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError) as exc:
        return None, f"the toolkit raises here ({exc.__class__.__name__})"


def frames_cmi(text: str) -> np.ndarray | None:
    """The toolkit's ``convert_to_frame_labels`` at commit 35235cb; ``None`` where its
    code raises (dict entries without a key or with a non-numeric time).

    >>> f = frames_cmi("[('9.6947', '10.0', 'Vibrato'), ('1.0', '2.0', 'Plucks')]")
    >>> int(f[:, TECHNIQUES.index("Vibrato")].sum()), int(f[:, TECHNIQUES.index("Plucks")].sum())
    (31, 0)
    """
    return frames_cmi_explained(text)[0]


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
