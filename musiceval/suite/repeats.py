"""Sampled answers, K per item (``musiceval run --repeats K``, ``pytest --musiceval-repeats K``,
``repeats = K`` of the config's ``[[model]]``): docs/evaluate-your-model.md, "Sampled answers".

A live model at a temperature above 0 is asked every item K times. Repeat ``r`` decodes with its
own seed, :func:`repeat_seed` of the run's seed and ``r`` (never of the order of the items or of
the repeats asked), through the same response cache: the settings, seed included, are in the cache
key, so each repeat is cached apart and a rerun is served from the cache. Repeat 0 decodes with
the run's own seed, so K = 1 is a run of one answer per item, byte for byte, and a run with more
repeats reuses its answers. The Random partner and the noise of repeat ``r`` are drawn from the
same seed: each repeat is a whole replicate of the experiment.

Every answer row carries its ``repeat``; a reader makes repeat ``k`` of item ``id`` the item
``id#r<k>`` in the original item's group (:func:`musiceval.data.answers.repeated_row`), so every
gate uses all K answers with the interval resampling clips, the unit the repeats and the items
are nested in (Cameron & Miller 2015, "A practitioner's guide to cluster-robust inference"), and
the coverage gate counts each item once.
"""
from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

from musiceval.models.base import GenerationSettings
from musiceval.records import ItemScores, Response

#: seeds stay below 2**31: OpenAI-compatible servers and torch take them
_SEED_RANGE = 2**31 - 1
#: a generation result: a dataclass with ``responses`` and ``failures`` (:class:`musiceval.generate.GenerationResult`)
Result = TypeVar("Result")


def repeat_seed(seed: int, repeat: int) -> int:
    """The sampling seed of repeat ``repeat``: the run's seed for repeat 0, else a hash of
    ``(seed, repeat)``.

    >>> repeat_seed(0, 0), repeat_seed(7, 0)
    (0, 7)
    >>> repeat_seed(0, 1) == repeat_seed(0, 1) != repeat_seed(1, 1)
    True
    """
    if repeat == 0:
        return int(seed)
    digest = hashlib.blake2b(f"musiceval-repeat:{int(seed)}:{int(repeat)}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % _SEED_RANGE


def repeat_settings(settings: GenerationSettings, repeat: int) -> GenerationSettings:
    """``settings`` with the seed of repeat ``repeat`` (:func:`repeat_seed`)."""
    return replace(settings, seed=repeat_seed(settings.seed, repeat))


def check_repeats(repeats: Any, settings: GenerationSettings, *, flag: str, args_flag: str,
                  formats: Sequence[tuple[str, str]] = ()) -> int:
    """``repeats`` as an int, refused (``ValueError`` naming ``flag`` and the fix) when below 1,
    when above 1 with greedy decoding (K identical answers), or when above 1 for a benchmark
    whose answer format holds one answer per question (``formats``: ``(benchmark, format)``)."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"{flag} {repeats!r}: expected a whole number >= 1 (1: one answer per item)")
    if repeats == 1:
        return 1
    if not settings.sampling:
        raise ValueError(f"{flag} {repeats} needs sampling: greedy decoding (temperature 0, or do_sample=false) gives "
                         f"{repeats} identical "
                         f"answers; set the model's temperature ({args_flag} temperature=0.7)")
    single = [name for name, fmt in formats if fmt == "cmi-bench"]
    if single:
        raise ValueError(f"{flag} {repeats}: {', '.join(single)} write CMI-Bench outputs, which hold one answer per "
                         f"question; ask them in a run without {flag}")
    return repeats


def tagged(responses: Iterable[Response], repeat: int) -> list[Response]:
    """``responses`` with ``meta["repeat"]`` (the answer files write it as the row's ``repeat``)."""
    return [replace(r, meta={**dict(r.meta), "repeat": repeat}) for r in responses]


def each_repeat(ask: Callable[[GenerationSettings], Result], settings: GenerationSettings,
                repeats: int) -> Iterator[tuple[int, Result]]:
    """``(r, ask(settings of repeat r))`` for r in 0..``repeats``-1 (:func:`repeat_settings`), in
    order: the loop ``musiceval run`` and ``musiceval generate`` share. With more than one repeat,
    each result's responses carry their repeat (:func:`tagged`) and its failures name the repeat's
    item (``<id>#r<k>``, :func:`musiceval.data.answers.repeat_id`); one repeat is returned as
    asked, so K = 1 is a run without repeats. ``repeats`` is checked by :func:`check_repeats`."""
    from musiceval.data.answers import repeat_id

    for repeat in range(repeats):
        result = ask(repeat_settings(settings, repeat))
        if repeats > 1:
            result = replace(result, responses=tagged(result.responses, repeat),  # type: ignore[type-var]
                             failures=[replace(f, item_id=repeat_id(f.item_id, repeat))
                                       for f in result.failures])  # type: ignore[attr-defined]
        yield repeat, result


@dataclass(frozen=True)
class Agreement:
    """How the K sampled answers of each item agree (:func:`agreement`)."""

    #: items with at least two repeats answered under Correct
    items: int
    #: the most repeats of one item
    repeats: int
    #: items whose repeats gave the same answer text (whitespace aside)
    identical: int
    #: items whose 0/1 headline score differs between repeats (None: the headline is not 0/1)
    flips: int | None
    #: the mean over items of the headline's range across repeats (max - min)
    spread: float

    def detail(self, metric: str) -> str:
        said = f"{self.identical:,} of {self.items:,} items gave the same answer in all {self.repeats} repeats"
        if self.flips is not None:
            return f"{said}; {metric} flips between right and wrong across repeats on {self.flips:,} items"
        return f"{said}; {metric} varies across repeats by {self.spread:.4f} on average (max - min per item)"


def agreement(repeat_of: Mapping[str, str], texts: Mapping[str, str], scores: ItemScores) -> Agreement | None:
    """Per original item, whether its repeats answered alike (``texts``: repeat id -> the Correct
    answer text) and whether its headline score moved (``scores``: per-row scores under Correct,
    rows named by repeat id). None when no item has two repeats.

    >>> import numpy as np
    >>> of = {"a#r0": "a", "a#r1": "a", "b#r0": "b", "b#r1": "b"}
    >>> s = ItemScores("acc", ids=list(of), values=np.array([1.0, 1.0, 1.0, 0.0]))
    >>> agreement(of, {"a#r0": "A", "a#r1": " A", "b#r0": "B", "b#r1": "C"}, s)
    Agreement(items=2, repeats=2, identical=1, flips=1, spread=0.5)
    """
    answers: dict[str, list[str]] = defaultdict(list)
    for rid, text in texts.items():
        if rid in repeat_of:
            answers[repeat_of[rid]].append(" ".join(str(text).split()))
    values: dict[str, list[float]] = defaultdict(list)
    for rid, value in zip(scores.ids, scores.values.tolist()):
        if rid in repeat_of and math.isfinite(value):
            values[repeat_of[rid]].append(value)
    items = [i for i, got in answers.items() if len(got) > 1]
    if not items:
        return None
    binary = all(v in (0.0, 1.0) for got in values.values() for v in got)
    moved = [max(values[i]) - min(values[i]) for i in items if values.get(i)]
    return Agreement(items=len(items), repeats=max(len(answers[i]) for i in items),
                     identical=sum(len(set(answers[i])) == 1 for i in items),
                     flips=sum(m > 0 for m in moved) if binary else None,
                     spread=math.fsum(moved) / len(moved) if moved else math.nan)


def correct_texts(answers: Any) -> dict[str, str]:
    """Repeat id -> the Correct answer of an :class:`~musiceval.data.answers.AnswerSet` whose rows
    carry repeats (the chunks of a chunked answer joined)."""
    out: dict[str, list[str]] = defaultdict(list)
    for r in answers.responses:
        if r.condition == "correct" and r.item_id in answers.repeat_of:
            out[r.item_id].append(r.text)
    return {k: "\n".join(v) for k, v in out.items()}


def record_agreement(gate: Any, run: Any) -> Agreement | None:
    """A FINDING of ``run`` (a protocol built from answers with repeats, :func:`musiceval.suite.runs.build_protocol`):
    the share of items whose K answers are identical, and how often the headline flips between
    right and wrong (or how far it moves) across repeats. Never decides the verdict."""
    found = agreement(run.repeat_of, run.repeat_texts, run.scores(run.headline, "correct"))
    if found is None:
        return None
    gate.finding(f"{run.model} {run.source}: answers agree across {found.repeats} sampled repeats",
                 estimate=found.identical / found.items, detail=found.detail(run.headline), protocol=run.name,
                 metric="identical answers across repeats", n=found.items)
    gate.record_table(run.name, f"{run.model} {run.source}: agreement across repeats", [{
        "items": found.items, "repeats": found.repeats, "identical answers": found.identical,
        "identical share": found.identical / found.items,
        f"{run.headline} flips": found.flips if found.flips is not None else "n/a (not right/wrong per item)",
        f"{run.headline} mean range": found.spread}])
    return found


__all__ = ["Agreement", "agreement", "check_repeats", "correct_texts", "each_repeat", "record_agreement", "repeat_seed",
           "repeat_settings", "tagged"]
