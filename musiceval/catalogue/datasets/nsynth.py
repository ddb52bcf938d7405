"""NSynth note ids: instrument family, source, instrument number, pitch and velocity.

An NSynth note id is ``<family>_<source>_<instrument>-<pitch>-<velocity>`` (Engel et al. 2017,
https://magenta.tensorflow.org/datasets/nsynth), e.g. ``bass_synthetic_068-049-025``; the family
may itself contain an underscore (``synth_lead``). The factual-QA label of a clip is its family.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

FAMILIES = ("bass", "brass", "flute", "guitar", "keyboard", "mallet", "organ", "reed", "string", "synth_lead", "vocal")
SOURCES = ("acoustic", "electronic", "synthetic")
_NOTE_ID = re.compile(r"^(?P<family>[a-z_]+?)_(?P<source>acoustic|electronic|synthetic)_(?P<instrument>\d{3})-(?P<pitch>\d{3})-(?P<velocity>\d{3})$")


@dataclass(frozen=True)
class NSynthNote:
    note_id: str
    family: str
    source: str
    instrument: int
    pitch: int
    velocity: int


def parse_note_id(name: str) -> NSynthNote:
    """Parse a note id or a path/file name ending in one (``.../bass_synthetic_068-049-025.wav``).

    Raises
    ------
    ValueError
        naming the input when it is not an NSynth note id or names an unknown family.
    """
    if not isinstance(name, str):
        raise ValueError(f"NSynth note id must be a string, got {type(name).__name__}")
    stem = PurePath(name.replace("\\", "/")).name
    stem = stem[:-4] if stem.lower().endswith(".wav") else stem
    m = _NOTE_ID.match(stem)
    if not m:
        raise ValueError(f"{name!r} is not an NSynth note id (<family>_<source>_<NNN>-<PPP>-<VVV>, e.g. bass_synthetic_068-049-025)")
    if m["family"] not in FAMILIES:
        raise ValueError(f"{name!r}: unknown NSynth family {m['family']!r}; expected one of {', '.join(FAMILIES)}")
    return NSynthNote(stem, m["family"], m["source"], int(m["instrument"]), int(m["pitch"]), int(m["velocity"]))


def family_from_note_id(name: str) -> str:
    """The instrument family of an NSynth note id: ``family_from_note_id("bass_synthetic_068-049-025") == "bass"``."""
    return parse_note_id(name).family
