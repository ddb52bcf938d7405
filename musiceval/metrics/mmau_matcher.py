"""MMAU's answer matching (Sakshi et al. 2025, "MMAU: A Massive Multi-Task Audio Understanding and
Reasoning Benchmark", ICLR; the benchmark's ``evaluation.py``).

Rule (:func:`string_match`): lowercase both texts and take their sets of ``\\b\\w+\\b`` tokens. The
prediction is correct when it contains every token of the answer and none of the tokens that
the other options have and the answer has not (options with exactly the answer's token set are
ignored). An empty prediction is wrong (and counted as "no prediction"). Accuracy is reported per
``task`` (sound, music, speech), per difficulty and in total, in percent; musiceval reports the
music subset (``task == "music"``) as fractions.

:func:`match_mmau` is the same rule as a matcher of the choice registry
(``matcher(output, options) -> index``): the option whose tokens the prediction matches, or
``UNANSWERED``. The two agree unless two options have identical token sets (then the official
rule accepts either for both and :func:`match_mmau` returns ``UNANSWERED``).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from musiceval.metrics.choice import MATCHERS, UNANSWERED, Output, as_text

_WORD = re.compile(r"\b\w+\b")


def tokens(text: str) -> set[str]:
    """Lowercased ``\\b\\w+\\b`` tokens, as a set."""
    return set(_WORD.findall(text.lower()))


def string_match(answer: str, prediction: str, choices: Sequence[str]) -> bool:
    """MMAU's official ``string_match``.

    >>> string_match("Grand piano", "It is a grand piano.", ["Piano", "Grand piano", "Organ"])
    True
    >>> string_match("Piano", "It is a grand piano.", ["Piano", "Grand piano", "Organ"])
    False
    """
    pred, ans = tokens(prediction), tokens(answer)
    if not pred:
        return False
    wrong: set[str] = set()
    for choice in choices:
        ct = tokens(choice)
        if ct != ans:
            wrong |= ct - ans
    return ans <= pred and pred.isdisjoint(wrong)


def match_mmau(output: Output, options: Sequence[str]) -> int:
    """Index of the option that :func:`string_match` accepts for ``output``, else ``UNANSWERED``."""
    text = as_text(output)
    hits = [k for k, opt in enumerate(options) if string_match(opt, text, options)]
    return hits[0] if len(hits) == 1 else UNANSWERED


MATCHERS.register("mmau", match_mmau, replace=True)
