"""Label normalisation and single-label matching for multi-class tasks (genre, instrument, technique).

CMI-Bench rule (``compat="cmi-bench"``): normalise response and labels by lowercasing and removing
``_ - ' . `` and spaces (``#`` becomes ``♯``); an item is correct iff the normalised gold label is a
substring of the normalised response and no other label of the task is. Raw substrings make some
labels unreachable: "trill" is inside "trillo", so a correct "trillo" answer always also contains
"trill" and is scored wrong; MIDI "110" contains "10" and "11".

Default rule: a label is found when it occurs as a whole word in the response (a space, "_" or "-"
may separate any two of its characters, so "hiphop" matches "hip-hop"; a plural "s"/"es" is
accepted), and a
match lying inside a longer match of another label does not count ("trill" inside "trillo",
"rock" inside "punk rock"). The prediction is the set of labels found; it must be exactly one.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable, Sequence


def normalise_cmi(text: str) -> str:
    """The toolkit's ``normalise``: drop ``_ - ' .`` and spaces, ``#`` -> ``♯``, lowercase.

    The toolkit's own chain of ``str.replace`` (several times faster than ``str.translate`` with a
    table on long responses; the same string, checked against the table in the tests).
    """
    return text.replace("_", "").replace("-", "").replace("#", "\u266f").replace("'", "").replace(" ", "").replace(".", "").lower()


def is_correct_cmi(response: str, gold: str, labels: Iterable[str]) -> bool:
    """Toolkit multi-class rule: gold is a substring of the response and no other label is."""
    return is_correct_cmi_normalised(normalise_cmi(response), normalise_cmi(gold), (normalise_cmi(x) for x in labels))


def is_correct_cmi_normalised(resp: str, gold: str, labels: Iterable[str]) -> bool:
    """:func:`is_correct_cmi` on strings already through :func:`normalise_cmi` (the toolkit normalises
    its label list once per task)."""
    if gold not in resp:
        return False
    return all(lab not in resp for lab in labels if lab != gold)


MAX_FLEXIBLE_LABEL = 256


@lru_cache(maxsize=4096)
def _label_pattern(label: str) -> re.Pattern[str]:
    chars = [c for c in label.lower().replace("\u266f", "#") if c not in " _-'."]
    if not chars:
        raise ValueError(f"label {label!r} has no characters to match")
    # a space, "_" or "-" may separate any two characters: "hiphop" ~ "hip-hop", "lip_trill" ~ "lip trill";
    # a "label" over MAX_FLEXIBLE_LABEL characters (a hostile or broken reference) is matched literally,
    # since the flexible pattern of a 300,000-character string takes tens of seconds to compile
    if len(chars) > MAX_FLEXIBLE_LABEL:
        body = re.escape("".join(chars))
    else:
        body = r"[\s_\-]?".join(re.escape(c) for c in chars)
    return re.compile(r"(?<![0-9a-z])" + body + r"(?:e?s)?(?![0-9a-z])")


def find_labels(response: str, labels: Sequence[str]) -> list[str]:
    """Labels mentioned in ``response`` as whole words, in order of first mention.

    A mention nested inside a longer mention of another label is ignored.

    >>> find_labels("I hear a trillo, not a trill.", ["trill", "trillo"])
    ['trillo', 'trill']
    >>> find_labels("punk rock", ["rock", "punk rock"])
    ['punk rock']
    """
    text = response.lower().replace("\u266f", "#")
    spans: list[tuple[int, int, str]] = []
    for lab in dict.fromkeys(labels):
        if not any(c not in " _-'." for c in lab):
            continue  # a label with nothing to match ("", "  ") is never mentioned
        for m in _label_pattern(lab).finditer(text):
            spans.append((m.start(), m.end(), lab))
    kept = [
        s for s in spans
        if not any(o is not s and o[0] <= s[0] and s[1] <= o[1] and (o[1] - o[0]) > (s[1] - s[0]) for o in spans)
    ]
    kept.sort()
    return list(dict.fromkeys(lab for _, _, lab in kept))


def predict_single_label(response: str, labels: Sequence[str]) -> str | None:
    """The one label the response names, or ``None`` when it names none or several."""
    found = find_labels(response, labels)
    return found[0] if len(found) == 1 else None
