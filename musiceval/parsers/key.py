"""Musical key parsing into mir_eval's ``"<tonic> <mode>"`` form with flat spellings.

Classes: the 24 keys "C major" ... "B minor" spelled with flats (Db, Eb, Gb, Ab, Bb), as in
GiantSteps and the CMI-Bench prompt.

CMI-Bench rule (:func:`parse_key_cmi`): lowercase, drop spaces and digits; a remainder of at most
3 characters ending in "m" gets "inor", one of at most 2 characters gets "major"; a sharp in the
second character maps to the enharmonic flat; the first class (in the order above) found as a
substring of the remainder wins. Anything else, including a crash of that code, is no key.

Default rule (:func:`parse_key`): find every "<A-G>[#/♯/b/♭/sharp/flat] major|minor|maj|min"
mention (or a bare answer such as "F#m", "Bb", "A minor."), map to flat spelling by pitch class;
the response must name exactly one distinct key.
"""
from __future__ import annotations

import re

from musiceval.parsers import ParseError

PITCH_NAMES = ("C", "Db", "D", "Eb", "E", "F", "Gb", "G", "Ab", "A", "Bb", "B")
KEY_CLASSES = tuple(f"{p} major" for p in PITCH_NAMES) + tuple(f"{p} minor" for p in PITCH_NAMES)
_NATURAL = {"c": 0, "d": 2, "e": 4, "f": 5, "g": 7, "a": 9, "b": 11}
_SHARP_TO_FLAT = {"c#": "db", "d#": "eb", "f#": "gb", "g#": "ab", "a#": "bb",
                  "c\u266f": "db", "d\u266f": "eb", "f\u266f": "gb", "g\u266f": "ab", "a\u266f": "bb"}


def parse_key_cmi(response: str) -> str | None:
    """The toolkit's ``get_pred``: a key class or ``None`` (also where the toolkit's code raised)."""
    tmp = "".join(ch for ch in response.lower().replace(" ", "") if not ch.isdigit())
    if len(tmp) <= 3 and tmp.endswith("m"):
        tmp += "inor"
    elif len(tmp) <= 2:
        tmp += "major"
    if len(tmp) < 2:
        return None  # IndexError in the toolkit, caught by its caller: score 0
    if tmp[1] in ("\u266f", "#"):
        if tmp[:2] not in _SHARP_TO_FLAT:
            return None  # KeyError ("e#", "b#") in the toolkit: score 0
        tmp = _SHARP_TO_FLAT[tmp[:2]] + tmp[2:]
    for cls in KEY_CLASSES:
        if cls.lower().replace(" ", "") in tmp:
            return cls
    return None


_ACC = r"(#|\u266f|b|\u266d|-?\s?sharp|-?\s?flat)?"
_MENTION = re.compile(r"(?<![a-z])([a-g])\s?" + _ACC + r"\s?-?\s?(major|minor|maj|min)(?![a-z])", re.I)
_BARE = re.compile(r"^\W*([a-g])\s?" + _ACC + r"\s?(m|min|maj|major|minor)?\W*$", re.I)


def _key_name(tonic: str, accidental: str | None, mode: str | None) -> str:
    pc = _NATURAL[tonic.lower()]
    acc = (accidental or "").lower().replace("-", "").replace(" ", "")
    if acc in ("#", "\u266f", "sharp"):
        pc += 1
    elif acc in ("b", "\u266d", "flat"):
        pc -= 1
    m = (mode or "major").lower()
    mode_name = "minor" if m in ("m", "min", "minor") else "major"
    return f"{PITCH_NAMES[pc % 12]} {mode_name}"


def find_keys(response: str) -> list[str]:
    """Distinct keys mentioned in ``response`` in order of first mention (flat spelling)."""
    bare = _BARE.match(response.strip())
    if bare:
        return [_key_name(*bare.groups())]
    return list(dict.fromkeys(_key_name(*m.groups()) for m in _MENTION.finditer(response)))


def parse_key(response: str) -> str:
    """The one key named in ``response``.

    >>> parse_key("The given audio is in the key of F# minor.")
    'Gb minor'
    >>> parse_key("Am")
    'A minor'

    Raises
    ------
    ParseError
        When no key or several distinct keys are named.
    """
    keys = find_keys(response)
    if not keys:
        raise ParseError("no key named")
    if len(keys) > 1:
        raise ParseError(f"several keys named: {', '.join(keys[:4])}")
    return keys[0]
