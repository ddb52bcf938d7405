"""Prompt templates for factual QA (docs/protocols/factual.md): per-task phrasings and the variants.

- :data:`PHRASINGS`: several phrasings per task; the first is the paper's ("Which instruments
  are used in this piece of music?", "What genre does this piece of music fall under?", "Which
  classical composer's style does this piece resemble the most?");
- :func:`among_prompt`: "Among {all labels}, ..." lists the vocabulary (raises recall, lowers
  precision in the paper);
- :func:`binary_prompt`: "Between A and B, ..." (build the pairs with
  :func:`musiceval.schemas.binary_choices`, true label first in exactly half);
- :func:`true_false_prompts`: one "Is {label} used in this song?" per label;
- :func:`variant_items`: dataset items rewritten for one variant (a ``musiceval generate``
  manifest, or the live path of :mod:`musiceval.protocols.factual.live`).
"""
from __future__ import annotations

from typing import Sequence

TASKS = ("instrument", "genre", "composer")
#: bump when a factual prompt wording changes: runs asked differently do not compare (provenance)
PROMPT_VERSION = "factual-prompts-1"

PHRASINGS: dict[str, tuple[str, ...]] = {
    "instrument": (
        "Which instruments are used in this piece of music?",
        "What instruments can you hear in this music?",
        "List the musical instruments that play in this recording.",
        "What's the music instrument?",
    ),
    "genre": (
        "What genre does this piece of music fall under?",
        "What is the genre of this music?",
        "Which music genre best describes this track?",
    ),
    "composer": (
        "Which classical composer's style does this piece resemble the most?",
        "Who composed this piece of music?",
        "Which composer's style is this piece closest to?",
    ),
}

_AMONG = {
    "instrument": "Among {labels}, which instruments are used in this piece of music?",
    "genre": "Among {labels}, what genre does this piece of music fall under?",
    "composer": "Among {labels}, which classical composer's style does this piece resemble the most?",
}
_BINARY = {
    "instrument": "Between {a} and {b}, which instrument is used in this piece of music?",
    "genre": "Between {a} and {b}, which genre does this piece of music fall under?",
    "composer": "Between {a} and {b}, which composer's style does this piece resemble the most?",
}
_TRUE_FALSE = {
    "instrument": "Is {label} used in this song? Answer yes or no.",
    "genre": "Is this song {label} music? Answer yes or no.",
    "composer": "Does this piece resemble the style of {label}? Answer yes or no.",
}


def _check(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")


def _display(label: str) -> str:
    return label.replace("_", " ")


def phrasing(task: str, style: int = 0) -> str:
    """Phrasing number ``style`` of a task's question (0 is the paper's)."""
    _check(task)
    options = PHRASINGS[task]
    if not 0 <= style < len(options):
        raise ValueError(f"task {task!r} has phrasings 0..{len(options) - 1}, got {style}")
    return options[style]


def among_prompt(task: str, labels: Sequence[str]) -> str:
    """The "Among {all labels}, ..." variant: ``among_prompt("genre", ["pop", "rock"])``."""
    _check(task)
    if not labels:
        raise ValueError("the 'Among' prompt needs the vocabulary's labels")
    names = [_display(x) for x in labels]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return _AMONG[task].format(labels=listed)


def binary_prompt(task: str, a: str, b: str) -> str:
    """The binary-choice variant "Between A and B, ..."."""
    _check(task)
    return _BINARY[task].format(a=_display(a), b=_display(b))


def true_false_prompts(task: str, labels: Sequence[str]) -> dict[str, str]:
    """One yes/no question per label: ``{label: "Is {label} used in this song? ..."}``."""
    _check(task)
    return {label: _TRUE_FALSE[task].format(label=_display(label)) for label in labels}


VARIANTS = ("paper", "among", "binary", "true-false")


def variant_items(items: Sequence, variant: str, task: str, labels: Sequence[str], *, seed: int = 0) -> list:
    """The items of one prompt variant, ready for ``musiceval generate`` / the live path.

    ``paper``: the items as they are (their question is the paper's phrasing); ``among``: the
    question replaced by :func:`among_prompt` over ``labels``; ``binary``: :func:`binary_prompt`
    over the item's first true label and one seeded distractor from ``labels``
    (:func:`musiceval.schemas.binary_choices`: true label first in exactly half), with
    ``meta["options"]``; ``true-false``: one item ``<id>#<label>`` per label with
    :func:`true_false_prompts`' question and ``meta["item"]``, ``meta["asked"]``. The ``binary`` and
    ``true-false`` answers score with ``musiceval score factual --answers binary|true-false``
    (:mod:`musiceval.protocols.factual.variants`).
    """
    from dataclasses import replace

    from musiceval.schemas import binary_choices

    _check(task)
    if variant == "paper":
        return list(items)
    if variant == "among":
        question = among_prompt(task, labels)
        return [replace(it, question=question) for it in items]
    if variant == "binary":
        unlabelled = [it.id for it in items if not it.labels]
        if unlabelled:
            raise ValueError(f"binary prompts need each item's true label; items {unlabelled[:5]} have none")
        pairs = binary_choices([it.labels[0] for it in items], labels, seed=seed, exclude=[it.labels for it in items])
        return [replace(it, question=binary_prompt(task, a, b), meta={**dict(it.meta), "options": [a, b]})
                for it, (a, b, _) in zip(items, pairs)]
    if variant == "true-false":
        questions = true_false_prompts(task, labels)
        return [replace(it, id=f"{it.id}#{label}", question=q, group=it.group or it.id,
                        meta={**dict(it.meta), "item": it.id, "asked": label})
                for it in items for label, q in questions.items()]
    raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
