"""AIR-Bench's foundation answer rule (Yang et al., "AIR-Bench: Benchmarking Large Audio-Language
Models via Generative Comprehension", ACL 2024; ``score_foundation.py`` of github.com/OFA-Sys/AIR-Bench
@ d5c1bdf).

Rule (:func:`answer_letter`): the response is stripped of surrounding white space, then its line
breaks are removed; an empty response or the text ``None`` gives no answer. The letter is the
*first* character when it is one of ``A B C D``, else the *second-to-last* character when it is
one (the script's comment: for a reply like "The answer is A."), else there is no answer. Both
tests are on single characters, so a reply that starts with a capital A-D is read as that letter
whatever it says ("Answer: B" is A, "Definitely C." is D), and a letter followed by two characters
("(B).") is not found.

:func:`match_airbench_foundation` is the rule as a matcher of the choice registry
(``matcher(output, options) -> index``). Two differences from the script, both documented in
docs/benchmarks.md: a letter beyond the item's last option (a "C" on a two-option item) is no
answer here (upstream compares it with the reference letter, which can never match, so accuracy is
the same); and upstream leaves unanswered items out of the accuracy's denominator (it prints them
as ``fail_num``), musiceval counts them wrong, as every choice benchmark here does. The optional
GPT step of the repository (``align_in_foundation.py``, which asks an LLM to map a free reply to a
letter before scoring) is not run.
"""
from __future__ import annotations

from collections.abc import Sequence

from musiceval.metrics.choice import LETTERS, MATCHERS, UNANSWERED, Output, as_text


def answer_letter(response: Output) -> str | None:
    """The letter ``score_foundation.py`` reads from ``response``, or None (no answer).

    >>> answer_letter("B")
    'B'
    >>> answer_letter("The answer is C.")   # the second-to-last character
    'C'
    >>> answer_letter("Answer: B")          # the first character wins: an A
    'A'
    >>> answer_letter("Definitely C.")      # a capital D opens the reply
    'D'
    >>> answer_letter("(B).") is None       # B is neither first nor second-to-last
    True
    >>> answer_letter("It is b.") is None   # lower case is no letter
    True
    >>> answer_letter("\\n C\\n") , answer_letter("None"), answer_letter("")
    ('C', None, None)
    """
    predict = as_text(response).strip().replace("\n", "")
    if not predict or predict == "None":
        return None
    if predict[0] in LETTERS:
        return predict[0]
    if len(predict) > 1 and predict[-2] in LETTERS:
        return predict[-2]
    return None


def match_airbench_foundation(output: Output, options: Sequence[str]) -> int:
    """Index of the option :func:`answer_letter` names, else ``UNANSWERED`` (also for a letter
    beyond the last of ``options``).

    >>> match_airbench_foundation("The answer is B.", ["fma", "jazz", "rock", "pop"])
    1
    >>> match_airbench_foundation("C", ["loud", "soft"])
    -1
    """
    letter = answer_letter(output)
    if letter is None:
        return UNANSWERED
    index = LETTERS.index(letter)
    return index if index < len(options) else UNANSWERED


MATCHERS.register("airbench-foundation", match_airbench_foundation, replace=True)
