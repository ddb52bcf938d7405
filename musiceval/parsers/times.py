"""Beat and downbeat time lists ("0.54s,0.96s,1.37s", "1:05.2", timestamps inside prose).

CMI-Bench rule (:func:`parse_times_cmi`): split on ","; strip each piece and delete every "s";
keep pieces that start with a digit; "m:ss" pieces become seconds, other pieces go through
``float`` (which raises on "10.0." or "0.0-0.54", and the toolkit then scores the item 0); sort.

Default rule (:func:`parse_times`): collect time tokens anywhere in the text: "m:ss(.f)" and
numbers carrying a seconds unit ("0.54s", "1.0ss", "3 sec") or a decimal point. A range
"0.0s-0.54s" contributes its start (a range is an event, not a beat). A unit-less number that
ends an answer whose other times carry units is an answer cut off mid-token and is dropped
("..., 68.0s, 68.5"). Bare integers in prose
("16 beats in total") are not times. Duplicates are dropped; the result is sorted. Times above
``max_time`` (mir_eval's 30000 s limit) are rejected, and so is a negative time ("-0.5s"): the
item fails rather than the sign being dropped.
"""
from __future__ import annotations

import re

import numpy as np

from musiceval.parsers import ParseError

MAX_TIME = 30000.0


def parse_times_cmi(text: str) -> np.ndarray:
    """The toolkit's ``get_beat``. Raises ``ValueError`` exactly where the toolkit's code raised."""
    out: list[float] = []
    for piece in text.split(","):
        piece = piece.strip().replace("s", "")
        if piece and piece[0].isdigit():
            if ":" not in piece:
                out.append(float(piece.strip()))
            elif piece.split(":")[1] != "":
                out.append(int(piece.split(":")[0]) * 60 + float(piece.split(":")[1]))
    out.sort()
    return np.array(out)


_TOKEN = re.compile(
    r"(?<![\d.:])"
    r"(?:(?P<min>\d{1,3}):(?P<sec>[0-5]?\d(?:\.\d+)?)"  # m:ss(.f)
    r"|(?P<num>\d+(?:\.\d+)?)(?P<unit>\s?(?:seconds?|secs?|s+)(?![a-z]))?)"
    r"(?P<range>\s?(?:-|to|–)\s?\d)?",
    re.I,
)


def parse_times(text: str, *, max_time: float = MAX_TIME) -> np.ndarray:
    """Sorted distinct times in seconds named in ``text``.

    >>> parse_times("The downbeat is at 0.0s, 0.54s, 1.0ss, 1:02 and 2.0ss.").tolist()
    [0.0, 0.54, 1.0, 2.0, 62.0]

    Raises
    ------
    ParseError
        When no time is found, a time is negative or a time exceeds ``max_time``.
    """
    times: list[float] = []
    with_unit = 0
    tail = text.rstrip()
    for m in _TOKEN.finditer(text):
        if m.start() > 0 and text[m.start() - 1] in "-\u2212":
            # "-0.5s": a negative time is an error in the answer, never read as its absolute value
            # (a range "0.0s-0.54s" is consumed by the first token and never reaches here)
            raise ParseError(f"negative time {text[m.start() - 1:m.end()].strip()!r}")
        if m.group("min") is not None:
            t = int(m.group("min")) * 60 + float(m.group("sec"))
        else:
            num = m.group("num")
            if m.group("unit") is None:
                if "." not in num:
                    continue  # a bare integer in prose is a count, not a time
                if with_unit and m.end() == len(tail):
                    continue  # the answer was cut off inside its last time ("..., 68.0s, 68.5")
            else:
                with_unit += 1
            t = float(num)
        times.append(t)
    if not times:
        raise ParseError("no times found")
    arr = np.unique(np.asarray(times, dtype=float))
    if arr[-1] > max_time:
        raise ParseError(f"time {arr[-1]:g} s exceeds {max_time:g} s")
    return arr
