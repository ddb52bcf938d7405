"""How every protocol reads an :class:`~musiceval.data.answers.AnswerSet`: the one reading of the
data layer's record, shared by the protocols' ``from_answers``.

- :func:`pairs`: each response with its item: by item id, except where a format asks the same
  item differently per response (multiple choice shuffles the options per run) and writes
  ``items`` aligned with ``responses`` (``items[k]`` is the question as ``responses[k]`` saw it);
  then the pairing is positional;
- :func:`orphans`: a per-item failure for each response whose item id names no item (counted,
  never dropped);
- :func:`conditions`: the conditions with responses, ``correct`` first;
- :func:`model_name`: the model that answered, as the report names it.
"""
from __future__ import annotations

from typing import Iterator

from musiceval.data.answers import AnswerSet
from musiceval.records import Item, ItemFailure, Response


def aligned(answers: AnswerSet) -> bool:
    """Whether ``items[k]`` is the question of ``responses[k]`` (positional pairing)."""
    return len(answers.items) == len(answers.responses) and all(
        i.id == r.item_id for i, r in zip(answers.items, answers.responses))


def pairs(answers: AnswerSet) -> Iterator[tuple[Item, Response]]:
    """``(item, response)`` for every response whose item is known (see the module docstring).
    A response whose item id has no item is not paired: :func:`orphans` counts it."""
    if aligned(answers):
        yield from zip(answers.items, answers.responses)
        return
    by_id = {i.id: i for i in answers.items}
    for r in answers.responses:
        if r.item_id in by_id:
            yield by_id[r.item_id], r


def orphans(answers: AnswerSet) -> list[ItemFailure]:
    """A failure per response whose item id names no item."""
    if aligned(answers):
        return []
    known = {i.id for i in answers.items}
    return [ItemFailure(r.item_id, f"{r.condition}: response for unknown item {r.item_id!r}")
            for r in answers.responses if r.item_id not in known]


def conditions(answers: AnswerSet) -> tuple[str, ...]:
    """Conditions with responses, ``correct`` first, then in file order."""
    seen = list(dict.fromkeys(r.condition for r in answers.responses))
    return tuple(sorted(seen, key=lambda c: c != "correct"))


def model_name(answers: AnswerSet) -> str:
    """The set's ``model``, else the responses' model names joined with ``+``, else ``"model"``."""
    if answers.model:
        return answers.model
    names = sorted({r.model for r in answers.responses if r.model and r.model != "unknown"})
    return "+".join(names) or "model"
