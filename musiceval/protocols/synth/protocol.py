"""The synthesised live-model questions as a :class:`~musiceval.protocols.base.Protocol`.

The live path (:mod:`musiceval.protocols.synth.gates`) asks a model about the synthesised clips of
``musiceval/evals/audio/`` (one question per clip: its instrument, key, tempo or MIDI pitch, whose
ground truth is the MIDI it was rendered from) and turns the generated answers into the same
:class:`~musiceval.data.answers.AnswerSet` a recorded answer file gives
(:meth:`musiceval.generate.GenerationResult.answer_set`); this class scores that set:

- ``accuracy``: 1 when the answer states the clip's ground truth (:func:`.metrics.answer_is_correct`),
  0 otherwise, per item and condition; ``scores(..., tasks=...)`` keeps the items of some tasks
  (the chance gate asks instrument and key only);
- an item asked under a condition without an answer there (the first chunk's) is a failure with its
  reason (the generation failure the answer set records for it, else "no response"): counted,
  never dropped.

Options (``settings.options``): ``tempo_tolerance`` (required: relative, the suite config's
``[live] tempo_tolerance``; 0.04 is MIREX's "Accuracy 1") and ``conditions`` (the conditions every
item was asked under; default: those with responses).

Not registered in :data:`~musiceval.protocols.base.PROTOCOLS`: it reads no answer file, so it has no
``musiceval score`` scorer and no ``[[model.answers]]`` entry; its thresholds are the suite config's
static ``[live]`` section, and its gates are collected through :data:`musiceval.evals.MODULES`
(docs/extending.md, "A protocol").
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from musiceval.data.answers import AnswerSet
from musiceval.protocols.pairing import conditions as answered_conditions
from musiceval.protocols.pairing import model_name, orphans, pairs
from musiceval.protocols.base import MetricInfo, Protocol, ProtocolSettings
from musiceval.protocols.synth.metrics import CHANCE, TASKS, answer_is_correct
from musiceval.records import Item, ItemFailure, ItemScores
from musiceval.stats.scales import BINARY

ACCURACY = "accuracy"


class SynthProtocol(Protocol):
    name = "live"
    headline = ACCURACY

    def __init__(self, items: Sequence[Item], texts: dict[tuple[str, str], str], *, asked: Sequence[str],
                 tempo_tolerance: float, failures: Sequence[ItemFailure] = (), model: str = "model", source: str = "",
                 seed: int = 0):
        self.items = list(items)
        #: (item id, condition) -> the first chunk's answer
        self.texts = texts
        self.asked = tuple(asked)
        self.tempo_tolerance = tempo_tolerance
        self._failures = list(failures)
        self.model = model
        self.source = source
        self.seed = seed

    @classmethod
    def from_answers(cls, answers: AnswerSet, settings: ProtocolSettings | None = None) -> "SynthProtocol":
        settings = settings or ProtocolSettings()
        where = answers.source or "the answer set"
        if "tempo_tolerance" not in settings.options:
            raise ValueError(f"{where}: SynthProtocol needs options['tempo_tolerance'] (relative, e.g. 0.04, MIREX's "
                             "Accuracy 1); pass the suite config's [live] tempo_tolerance")
        for item in answers.items:
            if item.meta.get("task") not in TASKS:
                raise ValueError(f"{where}: item {item.id!r} has task {item.meta.get('task')!r}; a synthesised question "
                                 f"sets meta['task'] to one of {', '.join(TASKS)} (scripts/make_audio_fixtures.py)")
        texts: dict[tuple[str, str], str] = {}
        for item, response in pairs(answers):
            if response.meta.get("chunk", 0) == 0:
                texts.setdefault((item.id, response.condition), response.text)
        asked = tuple(settings.options.get("conditions") or answered_conditions(answers))
        return cls(answers.items, texts, asked=asked, tempo_tolerance=float(settings.options["tempo_tolerance"]),
                   failures=[*answers.failures, *orphans(answers)], model=model_name(answers), source=answers.source,
                   seed=settings.seed)

    @property
    def conditions(self) -> tuple[str, ...]:
        return self.asked

    @property
    def metrics(self) -> tuple[str, ...]:
        return (ACCURACY,)

    @property
    def failures(self) -> list[ItemFailure]:
        return list(self._failures)

    def metric_info(self, metric: str) -> MetricInfo:
        if metric == ACCURACY:
            return MetricInfo(ACCURACY, True, "accuracy (0-1)", "the answer states the clip's ground truth", scale=BINARY)
        return super().metric_info(metric)

    def scores(self, metric: str, condition: str = "correct", *, tasks: Iterable[str] = TASKS) -> ItemScores:
        """``accuracy`` of the items of ``tasks`` under ``condition``, in item order, grouped by clip; an
        item without an answer there is a failure (see the module docstring)."""
        self.check(metric, condition)
        tasks = set(tasks)
        chosen = [i for i in self.items if i.meta["task"] in tasks]
        answered = [i for i in chosen if (i.id, condition) in self.texts]
        return ItemScores(
            metric=ACCURACY, condition=condition, ids=tuple(i.id for i in answered),
            values=[float(answer_is_correct(i, self.texts[i.id, condition], tempo_tolerance=self.tempo_tolerance))
                    for i in answered],
            groups=tuple(i.group or i.id for i in answered),
            failures=tuple(self._missing(i, condition) for i in chosen if (i.id, condition) not in self.texts),
        )

    def _missing(self, item: Item, condition: str) -> ItemFailure:
        """Why ``item`` has no answer under ``condition``: the generation failure recorded for it (its
        reason starts with the condition), else "no response"."""
        for f in self._failures:
            if f.item_id == item.id and f.under(condition):
                return f
        return ItemFailure(item.id, f"{condition}: no response")

    def accuracy_table(self) -> list[dict[str, Any]]:
        """One row per asked condition and task: ``condition``, ``task``, ``n`` (answered) and ``accuracy``."""
        rows = []
        for condition in self.conditions:
            for task in TASKS:
                s = self.scores(ACCURACY, condition, tasks=(task,))
                rows.append({"condition": condition, "task": task, "n": s.n, "accuracy": s.mean()})
        return rows

    def uniform_chance(self, scores: ItemScores) -> float:
        """The mean chance rate of a uniform guess (:data:`.metrics.CHANCE`) over the items of ``scores``,
        each of a task with a chance rate."""
        task = {i.id: i.meta["task"] for i in self.items}
        return sum(CHANCE[task[i]] for i in scores.ids) / max(scores.n, 1)
