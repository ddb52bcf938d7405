"""Multiple-choice answer matching and accuracy (MuChoMusic protocol).

Conventions
-----------
- Options are a sequence of distinct, non-empty strings labelled ``A``, ``B``, ... in order
  (MuChoMusic uses four: the answer and three distractors; distractor ablations use fewer).
- A *matcher* maps a model's free-text output to the index of the option it chose, or
  :data:`UNANSWERED` (``-1``) when the output maps to no option.
- Outputs may be ``str``, ``bytes`` (decoded as UTF-8, undecodable bytes replaced by U+FFFD)
  or ``None`` (no output: unanswered).

Matchers (:data:`MATCHERS`)
---------------------------
``muchomusic``
    The published rule of MuChoMusic (Weck et al., ISMIR 2024; ``extract_responses`` in
    ``muchomusic_eval/scoring.py`` of github.com/mulab-mir/muchomusic): keep the text after the
    last ``"The correct answer is:"``; if exactly one of the characters ``A B C D`` occurs in
    it (a per-character, case-sensitive test: the capital B of "Both" counts), that option;
    otherwise the first option whose lower-cased text occurs in the lower-cased output;
    otherwise unanswered.
``strict``
    A letter counts only where it stands as an option token ("(B)", "B)", "B.", "Answer: B",
    "**B**", or a line that is just "B"); exactly one distinct letter token gives that option,
    several give unanswered; with no letter token, exactly one option text occurring in the
    output gives that option ("guitar" inside a found "acoustic guitar" is not a second one);
    otherwise unanswered.

Metrics
-------
- :func:`accuracy`: share of items whose matched option is the correct one (unanswered items
  count as wrong).
- :func:`instruction_following_rate` (IFR): share of items whose output maps to an option.
- :func:`unanswered_rate`: ``1 - IFR``.
- :func:`choice_summary`: the three above, overall and per knowledge / reasoning dimension.
- :func:`run_spread`: mean, standard deviation and range of a metric over repeated runs
  (MuChoMusic averages three runs with different option shuffles).
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Callable

import numpy as np

from musiceval.schemas import ANSWER_PREFIX, LETTERS, UNANSWERED, validate_options  # noqa: F401  (re-exported)
from musiceval.registry import Registry

#: bump when a matcher's rule changes: runs scored with different matchers do not compare (provenance)
MATCHER_VERSION = "choice-matchers-1"

Output = str | bytes | None


def as_text(output: Output) -> str:
    """Return a model output as ``str``: ``None`` -> ``""``, bytes decoded leniently as UTF-8."""
    if output is None:
        return ""
    if isinstance(output, bytes):
        return output.decode("utf-8", errors="replace")
    if not isinstance(output, str):
        raise TypeError(f"model output must be str, bytes or None, not {type(output).__name__}")
    return output


def strip_answer_prefix(text: str, prefix: str = ANSWER_PREFIX) -> str:
    """Text after the last ``prefix`` (the whole text when absent), stripped, as MuChoMusic does."""
    return text.split(prefix)[-1].strip()


def match_muchomusic(output: Output, options: Sequence[str], prefix: str = ANSWER_PREFIX) -> int:
    """Map an output to an option index with MuChoMusic's published rule.

    Mirrors ``extract_responses`` of the MuChoMusic evaluation code: after removing everything
    up to the last ``prefix``, the set of characters of the output is intersected with
    ``{"A", "B", "C", "D"}``; a single hit selects that letter. Otherwise the first option
    (in prompt order) whose lower-cased, stripped text is a substring of the lower-cased
    output is selected. The letter set is always A-D as upstream; with fewer than four
    options, a single letter beyond the last option is unanswered (upstream returns its index,
    which can never be correct, so accuracy is identical).

    Parameters
    ----------
    output : str, bytes or None
        The model's raw output.
    options : sequence of str
        Option texts in prompt order.
    prefix : str
        Answer prefix to strip (MuChoMusic's ``"The correct answer is:"``).

    Returns
    -------
    int
        Index into ``options``, or :data:`UNANSWERED`.

    Examples
    --------
    >>> match_muchomusic("C", ["Reggae", "Pop", "Latin rock", "Ska"])
    2
    >>> match_muchomusic("Both A and D", ["Reggae", "Pop", "Latin rock", "Ska"])  # B, A, D
    -1
    >>> match_muchomusic("it is latin rock", ["Reggae", "Pop", "Latin rock", "Ska"])
    2
    """
    text = strip_answer_prefix(as_text(output), prefix)
    found = set(LETTERS).intersection(text)
    if len(found) == 1:
        index = LETTERS.index(found.pop())
        return index if index < len(options) else UNANSWERED
    lowered = text.lower().strip()
    for index, option in enumerate(options):
        if option.lower().strip() in lowered:
            return index
    return UNANSWERED


# Letter tokens of the strict matcher. Each pattern captures one upper-case letter; all use
# bounded, non-nested quantifiers so a megabyte-long output is matched in linear time.
_STRICT_LETTER_PATTERNS = (
    re.compile(r"\(([A-D])\)"),                                   # (B)
    re.compile(r"(?<![\w(])([A-D])\)"),                           # B)
    re.compile(r"(?<![\w.])([A-D])\.(?![\w.])"),                  # B.   (not B.B. or B.1)
    re.compile(r"\banswer(?: is)?[ \t]*[:：]?[ \t]*([A-D])\b", re.IGNORECASE),  # Answer: B
    re.compile(r"\*\*([A-D])\*\*"),                               # **B**
    re.compile(r"^[ \t]*([A-D])[ \t]*$", re.MULTILINE),           # a line that is just B
)


def strict_letter_tokens(text: str) -> set[str]:
    """The distinct upper-case letters A-D that stand as option tokens in ``text``."""
    letters: set[str] = set()
    for pattern in _STRICT_LETTER_PATTERNS:
        for m in pattern.finditer(text):
            letter = m.group(1)
            # IGNORECASE applies to "answer" only: option letters are upper case.
            if letter in LETTERS:
                letters.add(letter)
    return letters


def match_strict(output: Output, options: Sequence[str], prefix: str = ANSWER_PREFIX) -> int:
    """Map an output to an option index, counting a letter only where it is an option token.

    The text after the last ``prefix`` is searched for letter tokens ("(B)", "B)", "B.",
    "Answer: B", "**B**", a line that is just "B"; upper case only, since "a" is an English
    article). One distinct letter selects its option; several are ambiguous (unanswered), as is
    a letter beyond the last option. With no letter token, the output selects an option when
    exactly one option's lower-cased text occurs in it (not counting an option whose text occurs
    only inside another found option's text).

    Examples
    --------
    >>> match_strict("Answer: D", ["Reggae", "Pop", "Latin rock", "Ska"])
    3
    >>> match_strict("Both A and D", ["Reggae", "Pop", "Latin rock", "Ska"])
    -1
    """
    text = strip_answer_prefix(as_text(output), prefix)
    letters = strict_letter_tokens(text)
    if letters:
        if len(letters) > 1:
            return UNANSWERED
        index = LETTERS.index(letters.pop())
        return index if index < len(options) else UNANSWERED
    lowered = text.lower()
    found = {i: option.lower().strip() for i, option in enumerate(options) if option.lower().strip() in lowered}
    # An option found only as part of a longer option that is found ("guitar" inside
    # "acoustic guitar") is not a second mention.
    hits = [i for i, t in found.items() if not any(t != u and t in u for u in found.values())]
    return hits[0] if len(hits) == 1 else UNANSWERED


#: answer matchers by name; the benchmark-specific ones (MMAU, RUListening, AIR-Bench foundation)
#: live in their own modules, imported on first use
MATCHERS: Registry[Callable[[Output, Sequence[str]], int]] = Registry(
    "matcher", lazy_modules={"mmau": "musiceval.metrics.mmau_matcher", "rul": "musiceval.metrics.rul_matcher",
                             "airbench-foundation": "musiceval.metrics.airbench_matcher"})
MATCHERS.register("muchomusic", match_muchomusic)
MATCHERS.register("strict", match_strict)


def get_matcher(name: str) -> Callable[[Output, Sequence[str]], int]:
    """Return the matcher called ``name``; ``ValueError`` lists the known names."""
    if name not in MATCHERS:
        raise ValueError(f"unknown matcher {name!r}; choose one of {', '.join(sorted(MATCHERS.names()))}")
    return MATCHERS.get(name)


def _as_arrays(predicted: Sequence[int], correct: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    pred = np.asarray(predicted, dtype=int).reshape(-1)
    true = np.asarray(correct, dtype=int).reshape(-1)
    if pred.shape != true.shape:
        raise ValueError(f"predicted ({pred.size}) and correct ({true.size}) lengths differ")
    if np.any(true < 0):
        raise ValueError("correct indices must be >= 0")
    return pred, true


def correct_indicator(predicted: Sequence[int], correct: Sequence[int]) -> np.ndarray:
    """Per-item 0/1 array: 1 where the matched option is the correct one."""
    pred, true = _as_arrays(predicted, correct)
    return (pred == true).astype(float)


def accuracy(predicted: Sequence[int], correct: Sequence[int]) -> float:
    """Share of items answered correctly (unanswered counts as wrong); ``nan`` when empty."""
    hits = correct_indicator(predicted, correct)
    return float(hits.mean()) if hits.size else math.nan


def instruction_following_rate(predicted: Sequence[int]) -> float:
    """IFR (MuChoMusic): share of outputs that map to an option; ``nan`` when empty."""
    pred = np.asarray(predicted, dtype=int).reshape(-1)
    return float((pred != UNANSWERED).mean()) if pred.size else math.nan


def unanswered_rate(predicted: Sequence[int]) -> float:
    """Share of outputs that map to no option (``1 - IFR``); ``nan`` when empty."""
    pred = np.asarray(predicted, dtype=int).reshape(-1)
    return float((pred == UNANSWERED).mean()) if pred.size else math.nan


def _block(pred: np.ndarray, true: np.ndarray) -> dict[str, float]:
    return {
        "n": int(pred.size),
        "accuracy": accuracy(pred, true),
        "ifr": instruction_following_rate(pred),
        "unanswered": unanswered_rate(pred),
    }


def choice_summary(
    predicted: Sequence[int],
    correct: Sequence[int],
    dimensions: Mapping[str, Sequence[Sequence[str]]] | None = None,
) -> dict:
    """Accuracy, IFR and unanswered rate overall and per dimension value.

    Parameters
    ----------
    predicted, correct : sequence of int
        Matched and correct option indices, one per item.
    dimensions : mapping, optional
        ``{"knowledge": [[dims of item 0], ...], "reasoning": [...]}``; an item counts towards
        every dimension value it is tagged with (MuChoMusic's fine-grained scores).

    Returns
    -------
    dict
        ``{"n", "accuracy", "ifr", "unanswered", "per_dimension": {family: {value: block}}}``;
        ``per_dimension`` is empty when no item carries a dimension.
    """
    pred, true = _as_arrays(predicted, correct)
    out: dict = _block(pred, true)
    per_dimension: dict[str, dict[str, dict[str, float]]] = {}
    for family, tags in (dimensions or {}).items():
        if len(tags) != pred.size:
            raise ValueError(f"dimension {family!r}: {len(tags)} tag lists for {pred.size} items")
        values = sorted({t for item_tags in tags for t in item_tags})
        if not values:
            continue
        per_dimension[family] = {}
        for value in values:
            mask = np.array([value in item_tags for item_tags in tags])
            per_dimension[family][value] = _block(pred[mask], true[mask])
    out["per_dimension"] = per_dimension
    return out


def run_spread(values: Sequence[float]) -> dict[str, float]:
    """Mean, sample standard deviation (ddof=1; 0 for one run), min and max over runs."""
    arr = np.asarray(values, dtype=float).reshape(-1)
    if arr.size == 0:
        raise ValueError("run_spread needs at least one run")
    return {
        "n_runs": int(arr.size),
        "mean": float(arr.mean()),
        "std": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
        "min": float(arr.min()),
        "max": float(arr.max()),
    }


# ----------------------------------------------------------------------------- answer-blind strategies
#
# The chance level of a release gate is the strongest strategy that never looks at the question
# or the audio (docs/gate-your-model.md, "What the verdict means"): for multiple choice the best of a uniform guess,
# the best constant answer and the file's own answers moved to other items.


def best_constant_answer(correct: Sequence[int], n_options: Sequence[int]) -> tuple[int, np.ndarray]:
    """The option position that, always chosen, is right most often, and its per-item 0/1 scores.

    ``correct[i]`` is item ``i``'s correct position and ``n_options[i]`` its number of options
    (a position beyond an item's options is wrong there). Ties go to the earliest position, so the
    result does not depend on the order of the items.

    >>> best_constant_answer([3, 3, 0, 1], [4, 4, 4, 4])
    (3, array([1., 1., 0., 0.]))
    """
    true = np.asarray(correct, dtype=int).reshape(-1)
    sizes = np.asarray(n_options, dtype=int).reshape(-1)
    if true.size == 0 or true.size != sizes.size:
        raise ValueError(f"best_constant_answer needs one option count per item (got {true.size} and {sizes.size})")
    hits = [int(np.sum(true == k)) for k in range(int(sizes.max()))]
    best = int(np.argmax(hits))
    return best, ((true == best) & (best < sizes)).astype(float)


def answer_permutation_accuracy(predicted: Sequence[int], correct: Sequence[int],
                                groups: Sequence[str] | None = None) -> np.ndarray | None:
    """Per item, the expected accuracy of the file's own chosen positions moved to other items.

    Item ``i`` is scored against every answer given to an item of another group (track), and
    gets the share of those answers whose chosen position is its correct one: the exact
    expectation over all such moves (no sampling, so the same for any order of the items). An
    unanswered output is never right. A file whose answers ignore the question and the audio
    (a constant letter, letters drawn from the key's prior, answers shifted by one item) scores
    the same in place as moved: this is the answer-permutation null, paired by item. None when
    every item shares one group.

    >>> answer_permutation_accuracy([0, 1, 0, 1], [0, 1, 1, 0]).tolist()
    [0.3333333333333333, 0.3333333333333333, 0.6666666666666666, 0.6666666666666666]
    """
    pred, true = _as_arrays(predicted, correct)
    labels = np.asarray([str(g) for g in groups]) if groups is not None else np.arange(pred.size).astype(str)
    if labels.size != pred.size:
        raise ValueError(f"answer_permutation_accuracy: {labels.size} groups for {pred.size} items")
    _, codes = np.unique(labels, return_inverse=True)
    n_codes = int(codes.max()) + 1
    width = int(max(pred.max(initial=0), true.max(initial=0))) + 1
    answered = pred >= 0
    total = np.bincount(pred[answered], minlength=width).astype(float)
    per_group = np.zeros((n_codes, width))
    np.add.at(per_group, (codes[answered], pred[answered]), 1.0)
    others = pred.size - np.bincount(codes, minlength=n_codes)[codes]
    if not np.all(others > 0):
        return None
    same_position = total[true] - per_group[codes, true]
    return same_position / others
