"""Numbers in prose: emotion ratings on a 1-9 scale and MIDI pitches.

Ratings, CMI-Bench rule (:func:`parse_rating_cmi`, the toolkit's ``cal_r2`` + ``extract_int``):
delete "out of 9", "1-9 scale", "from 1 to 9", "<d>-point scale", "<d>/<d> time signature|beat",
"Example <d>"; take every run of digits, keep runs whose integer value is in 1..9; none -> missing;
two runs "a" and "b" with "a.b" in the text -> the float a.b; two equal runs -> that integer;
otherwise the first run (commits 2cafca5, 39a9c9b), or the last (commit 35235cb, ``last=True``).
So "0.6" reads as 6 and "2, 8, and 5" as 2 (35235cb: 5).

Ratings, default rule (:func:`parse_rating`): delete the same scale phrases, then read decimal
numbers ("5", "6.5"); keep those in [1, 9]; the response must name one distinct value.

Pitches (:func:`parse_midi_pitch`): MIDI numbers 0-127 ("69", "MIDI 60") or note names
("A4", "C#3", "A440" = A4); the response must name one distinct pitch.
"""
from __future__ import annotations

import re

from musiceval.parsers import ParseError

_SCALE_PHRASES = (
    (re.compile(r"out of 9"), ""),
    (re.compile(r"1-9 scale"), "scale"),
    (re.compile(r"from 1 to 9"), "scale"),
    (re.compile(r"\d-point scale"), "scale"),
    (re.compile(r"\d/\d time signature"), "time signature"),
    (re.compile(r"\d/\d beat"), "time signature"),
    (re.compile(r"Example \d"), ""),
)


def _strip_scale_phrases(text: str) -> str:
    for pattern, repl in _SCALE_PHRASES:
        text = pattern.sub(repl, text)
    return text


def parse_rating_cmi(response: str, *, last: bool = False) -> float | None:
    """The toolkit's ``extract_int`` after ``cal_r2``'s "out of 9" removal; ``None`` where it returns
    its missing marker -0.5. Of several digit runs the first is read, ``return int(numbers[0])`` at
    nicolaus625/CMI-bench commits 2cafca5 and 39a9c9b; with ``last=True`` the last,
    ``return int(numbers[-1])`` at commit 35235cb ("2, 8, and 5" -> 2, or 5 with ``last``)."""
    text = _strip_scale_phrases(response)
    runs = [r for r in re.findall(r"\d+", text) if 0 < int(r) < 10]
    if not runs:
        return None
    if len(runs) == 2 and f"{runs[0]}.{runs[1]}" in text:
        return float(f"{runs[0]}.{runs[1]}")
    return float(int(runs[-1 if last else 0]))


_DEFAULT_EXTRA = (
    re.compile(r"\b(?:scale|range) (?:of|from) 1\s?(?:-|to)\s?9\b", re.I),
    re.compile(r"\b1\s?(?:-|to)\s?9 scale\b", re.I),
    re.compile(r"\b(?:out of|/)\s?(?:9|10)\b", re.I),
    re.compile(r"\bexample \d+\b", re.I),
)
_DECIMAL = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?![\d])")


def parse_rating(response: str, *, low: float = 1.0, high: float = 9.0) -> float:
    """The one rating in ``[low, high]`` named in ``response``.

    >>> parse_rating("The arousal score of the music is estimated to be 6.5 out of 9.")
    6.5

    Raises
    ------
    ParseError
        When no rating, or several distinct ratings, are named.
    """
    text = _strip_scale_phrases(response)
    for pattern in _DEFAULT_EXTRA:
        text = pattern.sub(" ", text)
    values = list(dict.fromkeys(v for v in (float(x) for x in _DECIMAL.findall(text)) if low <= v <= high))
    if not values:
        raise ParseError(f"no rating in [{low:g}, {high:g}]")
    if len(values) > 1:
        raise ParseError(f"several ratings: {', '.join(f'{v:g}' for v in values[:4])}")
    return values[0]


_NOTE = re.compile(r"(?<![A-Za-z])([A-G])(#|\u266f|b|\u266d)?(-?\d)(?!\d)")
_A440 = re.compile(r"\bA\s?440(?:\s?hz)?\b", re.I)
_MIDI = re.compile(r"(?<![\d.A-Za-z#\u266f])(\d{1,3})(?![\d.]|\s?hz)", re.I)
_SEMITONE = {"C": 0, "D": 2, "E": 4, "F": 5, "G": 7, "A": 9, "B": 11}


def note_name_to_midi(name: str) -> int:
    """Scientific pitch notation to MIDI number ("A4" -> 69, "C#-1" -> 1)."""
    m = _NOTE.fullmatch(name.strip())
    if not m:
        raise ParseError(f"not a note name: {name!r}")
    letter, acc, octave = m.groups()
    semis = _SEMITONE[letter] + {"#": 1, "\u266f": 1, "b": -1, "\u266d": -1}.get(acc or "", 0)
    return semis + 12 * (int(octave) + 1)


def parse_midi_pitch(response: str) -> int:
    """The one MIDI pitch named in ``response`` (a number 0-127 or a note name).

    >>> parse_midi_pitch("The pitch of the given audio is A440 (A4).")
    69

    Raises
    ------
    ParseError
        When no pitch, or several distinct pitches, are named.
    """
    text = _A440.sub(" A4 ", response)
    pitches = [note_name_to_midi("".join(g or "" for g in m.groups())) for m in _NOTE.finditer(text)]
    text_wo_notes = _NOTE.sub(" ", text)
    pitches += [int(x) for x in _MIDI.findall(text_wo_notes) if int(x) <= 127]
    distinct = list(dict.fromkeys(pitches))
    if not distinct:
        raise ParseError("no pitch named")
    if len(distinct) > 1:
        raise ParseError(f"several pitches: {', '.join(map(str, distinct[:4]))}")
    return distinct[0]
