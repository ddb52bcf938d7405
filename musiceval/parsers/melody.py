"""Melody answers ``[(time, note), ...]`` (MedleyDB melody extraction) into times and Hz.

A note is a MIDI number ("60", 60.0) or a note name ("C#4", "D♭3"); ``''`` is unvoiced (0 Hz).
Dict entries ``{'time': t, 'MIDI_number': n}`` are accepted. Times may be "m:ss". Times are sorted,
the first entry per time is kept, and every time is shifted by ``10 * floor(first_time / 10)``.

CMI-Bench rule (:func:`parse_melody_cmi`): as above with the toolkit's quirks: a note name that is
not a note becomes MIDI 0 (8.2 Hz, voiced), an unreadable list is no answer (scored 0). The
toolkit ``eval``s the text and repairs two Python syntax errors; here the text is read with
:func:`ast.literal_eval`, then with a closing "]" added, then as the "(a, b)" groups the toolkit's
last-resort regex reads.

Default rule (:func:`parse_melody`): the same reading, but an unknown note name or a non-numeric
time makes the answer unreadable (:class:`ParseError`) instead of a voiced 8.2 Hz note.
"""
from __future__ import annotations

import ast
import math
import re

import numpy as np

from musiceval.parsers import ParseError
from musiceval.parsers.numbers import note_name_to_midi

_GROUP = re.compile(r"\(([^)]+)\)")


def _read_pairs(text: str) -> list[tuple[object, object]]:
    text = re.sub(r"\{'time':", "(", text)
    text = re.sub(r"'MIDI_number':", "", text)
    text = re.sub(r"\}", ")", text)
    if "{" in text:
        raise ParseError("unbalanced braces")
    text = text.replace("\u266f", "#").replace("\u266d", "b")
    if len(text) < 2:
        raise ParseError("empty answer")
    if text[-2] == "]":
        text = text[:-1]  # punctuation after the list
    value: object = None
    for candidate in (text, text + "]"):
        lo = candidate.find("[")
        try:
            value = ast.literal_eval(candidate[lo:] if lo >= 0 else candidate)
            break
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    else:
        # only up to the last ")": without a closing parenthesis ahead, the regex is quadratic
        value = [tuple(x.strip() for x in g.split(",")[:2]) for g in _GROUP.findall(text[: text.rfind(")") + 1]) if "," in g]
    if not isinstance(value, list) or not all(isinstance(p, tuple) and len(p) == 2 for p in value):
        raise ParseError("not a list of (time, note) pairs")
    if not value:
        raise ParseError("empty list")
    return value  # type: ignore[return-value]


def _time(t: object) -> float:
    s = str(t).strip().strip("'\"")
    if ":" in s:
        m, _, sec = s.partition(":")
        return float(m) * 60 + float(sec)
    return float(s)


def _note_hz(note: object, *, strict: bool) -> float:
    s = str(note).strip().strip("'\"")
    if s == "":
        return 0.0
    try:
        midi = float(s)
    except ValueError:
        try:
            midi = float(note_name_to_midi(s))
        except ParseError:
            if strict:
                raise
            midi = 0.0  # the toolkit's fallback for names that are not notes
    return 440.0 * 2.0 ** ((midi - 69.0) / 12.0)


def _parse(text: str, *, strict: bool) -> tuple[np.ndarray, np.ndarray]:
    pairs = _read_pairs(text)
    try:
        timed = sorted(((_time(t), n) for t, n in pairs), key=lambda p: p[0])
    except ValueError:
        raise ParseError("non-numeric time") from None
    seen: dict[float, object] = {}
    for t, n in timed:
        if math.isfinite(t):
            seen.setdefault(t, n)
    if not seen:
        raise ParseError("no finite times")
    times = np.array(list(seen), dtype=float)
    times -= times[0] // 10 * 10
    freqs = np.array([_note_hz(n, strict=strict) for n in seen.values()], dtype=float)
    return times, freqs


def parse_melody_cmi(text: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Times and frequencies by the toolkit's rule, or ``None`` where it gives up."""
    try:
        return _parse(text, strict=False)
    except (ParseError, ValueError, OverflowError):
        return None


def parse_melody(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Times (s) and frequencies (Hz, 0 = unvoiced) of a ``[(time, note), ...]`` answer.

    >>> t, f = parse_melody("[(0.5, 'A4'), (1.0, 60), (1.5, '')]")
    >>> t.tolist(), [round(float(x), 1) for x in f]
    ([0.5, 1.0, 1.5], [440.0, 261.6, 0.0])

    Raises
    ------
    ParseError
        When the answer is not a readable list of (time, note) pairs.
    """
    try:
        return _parse(text, strict=True)
    except OverflowError:
        raise ParseError("number out of range") from None
