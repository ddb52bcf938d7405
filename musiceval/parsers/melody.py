"""Melody answers ``[(time, note), ...]`` (MedleyDB melody extraction) into times and Hz.

A note is a MIDI number ("60", 60.0) or a note name ("C#4", "D♭3"); ``''`` is unvoiced (0 Hz).
Dict entries ``{'time': t, 'MIDI_number': n}`` are accepted. Times may be "m:ss". Times are sorted,
the first entry per time is kept, and every time is shifted by ``10 * floor(first_time / 10)``.

CMI-Bench rule (:func:`parse_melody_cmi`): ``process_midi_sequence`` of the toolkit's
``evaluate.py`` (nicolaus625/CMI-bench @ 35235cb) step by step: the dict layout rewritten to
tuples, ``♯``/``♭`` to ``#``/``b``, one character after a closing "]" dropped, then the *whole*
text read as a Python literal (the toolkit ``eval``s it; here :func:`ast.literal_eval`, so
arithmetic such as ``1/2`` is not evaluated); an unterminated string is cut at the last ")"
(from the "[" before it) and closed with ``)]``, an unclosed "[" is closed with "]", and any other
syntax error falls back to the ``(a, b)`` groups of the text *split on "," and not stripped*:
an unquoted note keeps its leading space (" D#4"), pretty_midi's ``note_name_to_number`` rejects
it and the note becomes MIDI 0 (8.18 Hz, voiced). Any note that is neither a number nor a note
name is MIDI 0; only the empty string is unvoiced, so the reference's MIDI 0 (the generator's
unvoiced frames) is a voiced 8.18 Hz note too. An integer time, or a time quoted inside its
string, makes the toolkit raise: no answer (scored 0), as is an unreadable list.

Default rule (:func:`parse_melody`): literal from the first "[" (then closed with "]"), else the
stripped ``(a, b)`` groups; an unknown note name or a non-numeric time makes the answer unreadable
(:class:`ParseError`) instead of a voiced 8.2 Hz note; MIDI number 0 and ``''`` are unvoiced
(0 Hz), in the reference and in the answer, as the MedleyDB generator writes unvoiced frames
as MIDI 0.
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
    """The default reading: literal from the first "[", else the stripped ``(a, b)`` groups."""
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


def _note_hz(note: object) -> float:
    s = str(note).strip().strip("'\"")
    if s == "":
        return 0.0
    try:
        midi = float(s)
    except ValueError:
        midi = float(note_name_to_midi(s))
    if midi == 0.0:
        return 0.0  # MIDI 0 is how the MedleyDB generator writes an unvoiced frame
    return 440.0 * 2.0 ** ((midi - 69.0) / 12.0)


def _parse(text: str) -> tuple[np.ndarray, np.ndarray]:
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
    freqs = np.array([_note_hz(n) for n in seen.values()], dtype=float)
    return times, freqs


_PM_NOTE = re.compile(r"^(?P<n>[A-Ga-g])(?P<off>[#b!]?)(?P<oct>[+-]?\d+)$")


def note_name_to_number_pm(name: str) -> int:
    """``pretty_midi.note_name_to_number``: ``^[A-Ga-g][#b!]?[+-]?\\d+$``, nothing stripped.

    Raises
    ------
    ValueError
        "Improper note format" for anything else (" D#4", "C", "H4").
    """
    m = _PM_NOTE.match(name)
    if m is None:
        raise ValueError(f"Improper note format: {name}")
    pitch = {"C": 0, "D": 2, "E": 4, "F": 5, "G": 7, "A": 9, "B": 11}[m.group("n").upper()]
    return 12 * (int(m.group("oct")) + 1) + pitch + {"#": 1, "": 0, "b": -1, "!": -1}[m.group("off")]


def _toolkit_sequence(text: str) -> list | None:
    """``process_midi_sequence`` up to its ``(time, note)`` list; ``None`` where it returns
    ``(None, None)``. Raises where the toolkit raises."""
    if "{" in text or "}" in text:
        text = re.sub(r"\{'time':", "(", text)
        text = re.sub(r"'MIDI_number':", "", text)
        text = re.sub(r"\}", ")", text)
    if "{" in text or "}" in text:
        return None
    text = text.replace("\u266f", "#").replace("\u266d", "b")
    if len(text) < 2:
        return None
    text = text[:-1] if text[-2] == "]" else text
    try:
        seq = ast.literal_eval(text)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError) as e:
        # eval's NameError (an unquoted name) is literal_eval's ValueError: both take the last branch
        if "unterminated string literal" in str(e):
            last = text.rfind(")")
            lo = text.find("[", 0, last)
            if lo == -1:
                return None
            try:
                seq = ast.literal_eval(text[lo:last] + ")]")
            except Exception:
                return None
        elif "'[' was never closed" in str(e):
            try:
                seq = ast.literal_eval(text + "]")
            except Exception:
                return None
        else:
            # a group needs a ")": searching only up to the last one keeps the regex linear
            groups = _GROUP.findall(text[: text.rfind(")") + 1])
            if any("," not in g for g in groups):
                return None  # the toolkit's split(",")[1] raises inside its try: (None, None)
            seq = [(g.split(",")[0], g.split(",")[1]) for g in groups]
    if not isinstance(seq, list) or not all(isinstance(p, tuple) and len(p) == 2 for p in seq):
        return None
    for i, item in enumerate(seq):
        if isinstance(item[0], float):
            continue
        if item[0].startswith("'") and item[0].endswith("'"):  # AttributeError for an int time: raises
            seq[i] = (item[1:-1], item[1])  # (sic): a tuple slice, so float() below fails
        if ":" in str(item[0]):
            try:
                seq[i] = (float(item[0].split(":")[1]) + float(item[0].split(":")[0]) * 60, item[1])
            except Exception:
                return None
    try:
        seq = [(float(x[0]), x[1]) for x in seq]
    except Exception:
        return None
    seen: dict[float, tuple] = {}
    for item in sorted(seq, key=lambda x: x[0]):
        seen.setdefault(item[0], item)
    out = sorted(seen.values(), key=lambda x: float(x[0]))
    return out or None


def _toolkit_hz(note: object) -> float:
    if isinstance(note, str):
        if note == "":
            return 0.0  # "0Hz, not midi_num=0"
        try:
            midi: object = float(note)
        except ValueError:
            try:
                midi = note_name_to_number_pm(note)
            except ValueError:
                midi = 0  # "note might be a string with Chinese characters"
    else:
        midi = note
    return float(440.0 * (2.0 ** ((midi - 69) / 12.0)))  # type: ignore[operator]


def parse_melody_cmi(text: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Times and frequencies by the toolkit's ``process_midi_sequence`` (commit 35235cb), or
    ``None`` where it returns ``(None, None)`` or raises (the toolkit's ``melody_evaluation``
    scores both 0).

    >>> t, f = parse_melody_cmi("[(0.5, D#4), (1.0, 0)]")   # unquoted: " D#4" is not a note
    >>> [round(float(x), 2) for x in f]
    [8.18, 8.18]
    """
    if not isinstance(text, str):
        return None
    try:
        seq = _toolkit_sequence(text)
        if seq is None:
            return None
        times = np.array([t for t, _ in seq], dtype=float)
        times = times - times[0] // 10 * 10
        freqs = np.array([_toolkit_hz(n) for _, n in seq], dtype=float)
    except (ValueError, TypeError, AttributeError, IndexError, OverflowError, MemoryError, RecursionError):
        return None
    return times, freqs


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
        return _parse(text)
    except OverflowError:
        raise ParseError("number out of range") from None
