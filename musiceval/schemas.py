"""Shapes shared by ``musiceval.data`` (loaders), ``musiceval.vocab`` (prompts) and ``musiceval.metrics``.

A low module: it imports only the standard library, numpy and :mod:`musiceval.records`, so
both packages can depend on it without depending on each other (data -> protocol -> metrics;
nothing in ``metrics`` imports ``data`` or back).

- multiple choice: :data:`LETTERS`, :data:`UNANSWERED`, :data:`ANSWER_PREFIX`,
  :func:`validate_options` (MuChoMusic's four lettered options);
- factual binary-choice prompts: :func:`binary_choices`;
- CMI-Bench: :class:`OutputRecord` (one answer of a model output file).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: option letters of a multiple-choice question, in prompt order
LETTERS = ("A", "B", "C", "D")
#: the matcher's value for an output that maps to no option
UNANSWERED = -1
#: the answer prefix of MuChoMusic's prompt, removed from outputs before matching
ANSWER_PREFIX = "The correct answer is:"


def validate_options(options: Sequence[str], answer: str | None = None) -> None:
    """Check a question's options (and answer letter) and raise ``ValueError`` naming the problem.

    Parameters
    ----------
    options : sequence of str
        Option texts in prompt order; between 2 and 4 distinct, non-empty strings.
    answer : str, optional
        The correct option's letter; must label one of ``options``.
    """
    if isinstance(options, (str, bytes)) or not isinstance(options, Sequence):
        raise ValueError(f"choices must be a list of strings, got {type(options).__name__}")
    if not 2 <= len(options) <= len(LETTERS):
        raise ValueError(f"expected 2 to {len(LETTERS)} choices, got {len(options)}")
    for i, opt in enumerate(options):
        if not isinstance(opt, str) or not opt.strip():
            raise ValueError(f"choice {LETTERS[i]} must be a non-empty string, got {opt!r}")
    normalised = [o.strip().lower() for o in options]
    if len(set(normalised)) != len(normalised):
        dup = next(o for o in options if normalised.count(o.strip().lower()) > 1)
        raise ValueError(f"duplicate choice {dup!r}: options must be distinct")
    if answer is not None:
        letters = LETTERS[: len(options)]
        if answer not in letters:
            raise ValueError(f"answer letter {answer!r} is not one of the choices {', '.join(letters)}")


def binary_choices(true_labels: Sequence[str], vocabulary: Sequence[str], *, seed: int = 0,
                   exclude: Sequence[Iterable[str]] | None = None) -> list[tuple[str, str, int]]:
    """Build binary-choice prompts: the true label and one random distractor per item.

    Returns ``(option_a, option_b, index_of_true)`` per item. The true label comes first in
    exactly ``n // 2`` items (the odd item, if any, goes to a seeded coin flip); distractors are
    drawn uniformly from the vocabulary minus the true label and minus ``exclude[i]`` (pass each
    item's full true label set for multi-label tasks, so the distractor is never also true).
    """
    vocabulary = list(dict.fromkeys(vocabulary))
    rng = np.random.default_rng(seed)
    n = len(true_labels)
    first = np.array([1] * (n // 2) + [0] * (n - n // 2))
    if n % 2:
        first[-1] = rng.integers(2)
    rng.shuffle(first)
    out = []
    if exclude is not None and len(exclude) != n:
        raise ValueError(f"exclude has {len(exclude)} entries for {n} items; pass one label set per item")
    for i, label in enumerate(true_labels):
        banned = {label, *(exclude[i] if exclude is not None else ())}
        others = [v for v in vocabulary if v not in banned]
        if not others:
            raise ValueError(f"vocabulary {vocabulary} has no distractor for label {label!r}")
        distractor = others[rng.integers(len(others))]
        out.append((label, distractor, 0) if first[i] else (distractor, label, 1))
    return out


@dataclass(frozen=True)
class OutputRecord:
    """One model answer in a CMI-Bench output file."""

    item_id: str
    index: int
    question: str
    response: str
    correct_answer: str
    audioid: str
    group: str
    other: Any = ""
