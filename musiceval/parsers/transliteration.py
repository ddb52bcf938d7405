"""Transliterated Arab-Andalusian names (nawba, tab, form, mizan) in free-text answers.

CMI-Bench rule (``compat``; ``andalusian_normalise`` and ``andalusian_multiclass_acc`` of
``evaluate.py`` at nicolaus625/CMI-bench@35235cb): the toolkit's ``normalise``
(:func:`musiceval.parsers.labels.normalise_cmi`: drop ``_ - ' .`` and spaces, lowercase), then
Unicode NFKD with the combining marks dropped ("ā" -> "a", "ṣ" -> "s") and the quotes "‘", "’" and
"`" deleted; an answer is right when the reference so normalised is a substring of the answer so
normalised. No other label is checked: an answer that lists every name of the instruction is right,
and the reference "mashālīyah" is found inside the answer "al-mashālīyah".

Default rule: the same diacritic folding, then the labels the answer names as whole words
(:func:`musiceval.parsers.labels.find_labels`: a longer name wins over one nested inside it); the
answer must name exactly one label.
"""
from __future__ import annotations

import unicodedata
from typing import Sequence

from musiceval.parsers.labels import find_labels, normalise_cmi

#: quote marks of the transliteration the toolkit deletes after folding
TOOLKIT_QUOTES = ("‘", "’", "`")
#: marks folded away by the default rule: the toolkit's, the ayn and hamza half rings and the apostrophe
_FOLD_DROP = str.maketrans("", "", "‘’`ʿʾ'")


def strip_diacritics(text: str) -> str:
    """``text`` in NFKD with every combining mark dropped ("ḥjāz" -> "hjaz")."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def normalise_andalusian_cmi(text: str) -> str:
    """The toolkit's ``andalusian_normalise``: :func:`normalise_cmi`, diacritics stripped, quotes deleted.

    The toolkit also replaces the precomposed letters "ā ī ū ḥ ḍ ṣ ṭ" by their base letters; after
    NFKD none is left, so those replacements change nothing and are not repeated here.

    >>> normalise_andalusian_cmi("Al-Mūssi‘")
    'almussi'
    """
    text = strip_diacritics(normalise_cmi(text))
    for mark in TOOLKIT_QUOTES:
        text = text.replace(mark, "")
    return text


def is_correct_andalusian_cmi(response: str, gold: str) -> bool:
    """Toolkit rule: the normalised reference is non-empty and a substring of the normalised answer."""
    ref = normalise_andalusian_cmi(gold)
    return bool(ref) and ref in normalise_andalusian_cmi(response)


def fold(text: str) -> str:
    """Diacritics stripped, transliteration quotes deleted, lowercase ("Ṣāmat Ruṣṣad" -> "samat russad")."""
    return strip_diacritics(text).translate(_FOLD_DROP).lower()


def find_transliterated(response: str, labels: Sequence[str]) -> list[str]:
    """The labels ``response`` names as whole words after :func:`fold`, in order of first mention.

    >>> find_transliterated("It is al-Mashaliyah.", ["mashālīyah", "al-mashālīyah"])
    ['al-mashālīyah']
    """
    folded: dict[str, str] = {}
    for label in labels:
        folded.setdefault(fold(label), label)
    return [folded[f] for f in find_labels(fold(response), list(folded))]
