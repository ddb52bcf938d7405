"""``normalise_cmi`` (the toolkit's replace chain) equals the translate-table form it replaced."""
from __future__ import annotations

import random

from musiceval.parsers.labels import normalise_cmi

_TABLE = str.maketrans({"_": "", "-": "", "'": "", " ": "", ".": ""})
ALPHABET = "aZ _-'.#♯\u266fÉß\u0130ı\n\t0-9🎸\u200b"


def _reference(text: str) -> str:
    return text.replace("#", "\u266f").translate(_TABLE).lower()


def test_same_string_as_the_translate_table_on_random_and_real_text():
    rng = random.Random(0)
    texts = ["C# minor", "Hip-Hop", "rock'n'roll", "lip_trill", "A.B. C", "İstanbul", ""]
    texts += ["".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 40))) for _ in range(5000)]
    for t in texts:
        assert normalise_cmi(t) == _reference(t), repr(t)
