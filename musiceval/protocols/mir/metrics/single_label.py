"""Single-label tasks of the CMI-Bench development branch scored by their own toolkit rule.

- Arab-Andalusian nawba, tab, form and mizan (family ``andalusian``): ``accuracy``. The toolkit
  (``andalusian_multiclass_acc`` of ``evaluate.py`` at nicolaus625/CMI-bench@35235cb) counts an answer
  right when its reference, folded, is a substring of it, whatever else it names
  (:func:`musiceval.parsers.transliteration.is_correct_andalusian_cmi`); by default the answer must
  name exactly one label of the task's list, diacritics folded
  (:func:`musiceval.parsers.transliteration.find_transliterated`), and it must be the reference.
- Lyra dance (family ``yes_no``): ``accuracy``. The toolkit (``lyra_dance_acc``) counts a "yes" item
  right when the normalised answer contains "yes" and no "no", any other item when it contains "no" and
  no "yes", as substrings, so "Yes, it is not a dance" is no "yes" ("not" holds "no") and "I know" is a
  "no"; by default the answer must name exactly one of the whole words "yes" and "no" (the
  classification rule of :func:`musiceval.protocols.mir.metrics.families.classify`).

Unparsed answers score 0 and are listed; the trivial baseline is the majority label.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from musiceval.records import ItemFailure
from musiceval.schemas import OutputRecord


def andalusian_values(task: str, records: Sequence[OutputRecord], compat: str | None,
                      vocabulary: Sequence[str]) -> tuple[np.ndarray, list[ItemFailure]]:
    """0/1 per item (module docstring)."""
    from musiceval.parsers.transliteration import find_transliterated, fold, is_correct_andalusian_cmi

    if compat:
        return np.array([float(is_correct_andalusian_cmi(r.response, r.correct_answer)) for r in records]), []
    labels = list(dict.fromkeys([*vocabulary, *(r.correct_answer for r in records)]))
    values, failures = [], []
    for r in records:
        found = find_transliterated(r.response, labels)
        if len(found) != 1:
            why = "no label named" if not found else f"several labels named: {', '.join(found[:4])}"
            failures.append(ItemFailure(r.item_id, f"{why}: {r.response[:60]!r}"))
        values.append(float(len(found) == 1 and fold(found[0]) == fold(r.correct_answer)))
    return np.array(values), failures


def is_correct_dance_cmi(response: str, gold: str) -> bool:
    """The toolkit's ``lyra_dance_acc`` rule for one item."""
    from musiceval.parsers.labels import normalise_cmi

    text = normalise_cmi(response)
    if normalise_cmi(gold) == "yes":
        return "yes" in text and "no" not in text
    return "no" in text and "yes" not in text


def yes_no_values(task: str, records: Sequence[OutputRecord], compat: str | None,
                  vocabulary: Sequence[str]) -> tuple[np.ndarray, list[ItemFailure]]:
    """0/1 per item (module docstring)."""
    from musiceval.protocols.mir.metrics.families import classify

    if compat:
        return np.array([float(is_correct_dance_cmi(r.response, r.correct_answer)) for r in records]), []
    return classify(task, records, None, vocabulary)


#: family -> its per-item rule
RULES = {"andalusian": andalusian_values, "yes_no": yes_no_values}
