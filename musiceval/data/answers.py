"""The answers of one model on one dataset, as every answer format loads them.

An :class:`AnswerSet` is what :func:`musiceval.data.formats.load_answers` returns and what every
protocol's ``from_answers`` reads: the items (questions with their references or labels), the
model's responses (each under a ``condition``: ``correct`` or a control such as ``random``,
``noise``, ``text_only``), and the records that could not be read (per-item failures, counted,
never dropped), and the items a format's rule leaves out (``excluded``: counted under the rule,
:mod:`musiceval.exclusions`).

Pairing responses with items: by item id, except where a dataset asks the same item differently
per response (multiple choice shuffles the options per run); such a format writes ``items``
aligned with ``responses`` (``items[k]`` is the question as ``responses[k]`` saw it), and the
pairing is positional. The protocols read a set one way, :mod:`musiceval.protocols.pairing`.

Conventions of ``Response.meta`` the builtin protocols read: ``run`` (choice: the shuffle
index), ``chunk`` and ``n_chunks`` (factual: answers given per audio chunk), ``draw`` (free-form:
one of K live Random pairings). A row carrying ``repeat`` (``musiceval run --repeats K``: K sampled
answers per item) is the row of its own item, :func:`repeated_row`. ``extra`` holds format-specific facts, e.g. ``extra["task"]``
(the CMI-Bench task of an MIR output file).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from musiceval.exclusions import Exclusion
from musiceval.records import Item, ItemFailure, Response

if TYPE_CHECKING:
    from musiceval.data.benchmarks import KnownBenchmark


@dataclass
class AnswerSet:
    """Items, responses (with ``condition``) and unreadable records of one answer file."""

    items: list[Item] = field(default_factory=list)
    responses: list[Response] = field(default_factory=list)
    failures: list[ItemFailure] = field(default_factory=list)
    #: the model that answered (from the file: ``model_name``, the CMI-Bench file-name prefix)
    model: str = ""
    #: where the answers came from (the file path)
    source: str = ""
    #: the answer format's registry name (e.g. ``dasheng-choice``)
    format: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: items left out by a named rule of the format (e.g. a reference that only copies the question)
    excluded: list[Exclusion] = field(default_factory=list)
    #: the published benchmark the file belongs to (its size, the options it brings), as
    #: :func:`musiceval.data.formats.load_answers` recognises it; None for any other dataset
    benchmark: KnownBenchmark | None = None
    #: model name -> records read, a second answer to an item included (a loader that counts that
    #: record as a failure keeps its model here, :func:`count_model`); empty: the responses'
    #: ``model`` name every model of the file
    models: dict[str, int] = field(default_factory=dict)
    #: item id of a repeat (``<id>#r<k>``) -> the id of the item it repeats (:func:`repeated_row`);
    #: empty for a file of one answer per item
    repeat_of: dict[str, str] = field(default_factory=dict)

    def original_id(self, item_id: str) -> str:
        """The benchmark item ``item_id`` answers: itself, or the item a repeat repeats."""
        return self.repeat_of.get(item_id, item_id)


def count_model(answers: AnswerSet, name: Any) -> None:
    """Tally the model name of one record read (kept or not) in ``answers.models``."""
    if isinstance(name, str) and name.strip():
        answers.models[name] = answers.models.get(name, 0) + 1


#: the fix a refused file's message ends with
ONE_MODEL_FIX = ("split the file per model (or per run), or declare each model's file: a [[model]] with its own "
                 "[[model.answers]] (docs/gate-your-model.md)")


def one_model(names: Iterable[Any]) -> tuple[str, frozenset[str]]:
    """``(model, strays)`` from the model name of every record (``""``, ``"unknown"`` and
    non-strings name none): the one model that answered, and the names a single record gives
    beside it (one bad record: its line's failure, :func:`drop_strays`, never a stop for the file).

    Raises ``ValueError`` naming the models and their record counts (the caller prefixes the file)
    when two models or more answered two records or more each, or none did: a gate is about one
    model, and two models' answers in one file would pass as one."""
    counts = Counter(n for n in names if isinstance(n, str) and n.strip() and n != "unknown")
    if len(counts) <= 1:
        return next(iter(counts), ""), frozenset()
    answered = [name for name, n in counts.items() if n > 1]
    if len(answered) != 1:
        found = ", ".join(f"{name} ({n:,} records)" for name, n in sorted(counts.items()))
        raise ValueError(f"answers of several models in one file: {found}; {ONE_MODEL_FIX}")
    return answered[0], frozenset(counts) - {answered[0]}


def stray_reason(name: str, model: str) -> str:
    """The failure of a single record that names another model than the rest of its file."""
    return (f"answered by model {name!r}, every other record of the file by {model!r}: one model per file; "
            "drop the record or split the file per model")


def drop_strays(answers: AnswerSet, model: str, strays: frozenset[str]) -> None:
    """Move the answers of the ``strays`` models (each a single record, :func:`one_model`) to the
    set's failures, with their items (by position when items and responses are aligned, else the
    items none of whose answers is left)."""
    if not strays:
        return
    aligned = len(answers.items) == len(answers.responses) and all(
        i.id == r.item_id for i, r in zip(answers.items, answers.responses))
    keep = [k for k, r in enumerate(answers.responses) if r.model not in strays]
    dropped = [r for r in answers.responses if r.model in strays]
    answers.failures.extend(ItemFailure(r.item_id, f"{r.condition}: {stray_reason(r.model, model)}") for r in dropped)
    if aligned:
        answers.items = [answers.items[k] for k in keep]
    answers.responses = [answers.responses[k] for k in keep]
    if not aligned:
        left, gone = {r.item_id for r in answers.responses}, {r.item_id for r in dropped}
        answers.items = [i for i in answers.items if i.id in left or i.id not in gone]


def split_labels(value) -> tuple[str, ...]:
    """An item's true labels from an answer file's field: a list of strings as it is, or one
    comma-separated string split (CMI-Bench's ``correct_answer``, musiceval's ``labels``).
    Raises ``ValueError`` for anything else; the loaders count it as that line's failure."""
    if isinstance(value, str):
        return tuple(x.strip() for x in value.split(",") if x.strip())
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return tuple(value)
    raise ValueError(f"labels must be a string or a list of strings, got {type(value).__name__}")


#: a repeat's item id, ``<id>#r<k>`` (:func:`repeat_id`)
_REPEAT_ID = re.compile(r"(.+)#r(\d+)")


def repeat_id(item_id: str, repeat: int) -> str:
    """The item id of repeat ``repeat`` of ``item_id``: ``<id>#r<k>``."""
    return f"{item_id}#r{repeat}"


def repeated_item(item_id: str) -> str:
    """The item a repeat's id names (``<id>#r<k>`` -> ``<id>``, :func:`repeat_id`); any other id itself.

    >>> repeated_item("q7#r2"), repeated_item("q7")
    ('q7', 'q7')
    """
    found = _REPEAT_ID.fullmatch(str(item_id))
    return found.group(1) if found else str(item_id)


def repeated_row(row: dict, id_key: str, repeat_of: dict[str, str]) -> dict:
    """``row`` as the row of its own item when it carries ``repeat`` (K sampled answers per item,
    docs/evaluate-your-model.md, "Sampled answers"): its id becomes ``<id>#r<k>`` and its ``group``
    the original item's group (its clip; the item id where it had none), so every condition's
    answers of repeat k stay paired under one id and every interval resamples the clips the
    repeats are nested in. Records the new id in ``repeat_of``. A row without ``repeat`` (or without
    an id, which its loader reports) is returned as it is.

    Raises ``ValueError`` for a ``repeat`` that is not a non-negative integer (the loaders count it
    as that line's failure).

    >>> seen = {}
    >>> repeated_row({"id": "q1", "group": "clip7", "repeat": 2}, "id", seen)
    {'id': 'q1#r2', 'group': 'clip7'}
    >>> seen
    {'q1#r2': 'q1'}
    """
    if "repeat" not in row:
        return row
    repeat = row["repeat"]
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 0:
        raise ValueError(f"field 'repeat' must be a non-negative integer (the sampled answer's index), got {repeat!r}")
    original = row.get(id_key)
    if not isinstance(original, (str, int)) or isinstance(original, bool) or not str(original).strip():
        return {k: v for k, v in row.items() if k != "repeat"}
    new = repeat_id(str(original), repeat)
    repeat_of[new] = str(original)
    out = {k: v for k, v in row.items() if k != "repeat"}
    out[id_key] = new
    out["group"] = str(row.get("group") or original)
    return out
