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
pairing is positional. The protocols read a set one way, :mod:`musiceval.protocols.answers`.

Conventions of ``Response.meta`` the builtin protocols read: ``run`` (choice: the shuffle
index), ``chunk`` and ``n_chunks`` (factual: answers given per audio chunk), ``draw`` (free-form:
one of K live Random pairings). ``extra`` holds format-specific facts, e.g. ``extra["task"]``
(the CMI-Bench task of an MIR output file).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from musiceval.exclusions import Exclusion
from musiceval.records import Item, ItemFailure, Response

if TYPE_CHECKING:
    from musiceval.data.benchmarks import Benchmark


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
    benchmark: Benchmark | None = None


def split_labels(value) -> tuple[str, ...]:
    """An item's true labels from an answer file's field: a list of strings as it is, or one
    comma-separated string split (CMI-Bench's ``correct_answer``, musiceval's ``labels``).
    Raises ``ValueError`` for anything else; the loaders count it as that line's failure."""
    if isinstance(value, str):
        return tuple(x.strip() for x in value.split(",") if x.strip())
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return tuple(value)
    raise ValueError(f"labels must be a string or a list of strings, got {type(value).__name__}")
