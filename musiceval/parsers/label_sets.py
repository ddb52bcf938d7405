"""Label sets in free-text answers (Lyra instruments, genres and places: "Voice, Violin, Laouto").

CMI-Bench rule (``compat``; ``lyra_label_set`` and ``lyra_multilabel_scores`` of ``evaluate.py`` at
nicolaus625/CMI-bench@35235cb): a reference is split on commas and each label put through the
toolkit's ``normalise`` (:func:`musiceval.parsers.labels.normalise_cmi`); the file's label list is
every label of every reference; an answer names a label when the normalised label is a substring of
the normalised answer, so "bass" is named by "Double bass" and "Crete" by "East-Crete".

Default rule: the labels the answer names as whole words (:func:`musiceval.parsers.labels.find_labels`:
a hyphen or space may separate the parts of a name, and a longer name wins over one nested inside it,
so "East-Crete" does not also name "Crete"), from the instruction's list and the file's references.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from musiceval.parsers.labels import find_labels, normalise_cmi


def reference_labels(text: str) -> tuple[str, ...]:
    """The labels of a reference answer: comma-separated, stripped, empty parts dropped."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def label_set_cmi(text: str) -> frozenset[str]:
    """The toolkit's ``lyra_label_set``: the comma-separated labels, normalised, empty ones dropped."""
    return frozenset(n for n in (normalise_cmi(part) for part in text.split(",")) if n)


def named_labels_cmi(response: str, labels: Iterable[str]) -> frozenset[str]:
    """The toolkit's prediction: every (normalised) label that is a substring of the normalised answer."""
    text = normalise_cmi(response)
    return frozenset(label for label in labels if label in text)


def named_labels(response: str, labels: Sequence[str]) -> frozenset[str]:
    """The labels ``response`` names as whole words (default rule), as :func:`normalise_cmi` keys.

    >>> sorted(named_labels("East-Crete and Icaria", ["Crete", "East-Crete", "Icaria"]))
    ['eastcrete', 'icaria']
    """
    return frozenset(normalise_cmi(label) for label in find_labels(response, labels))
