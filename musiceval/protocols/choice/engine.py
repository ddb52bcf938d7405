"""Multiple-choice answers matched and aggregated (MuChoMusic, docs/protocols/choice.md): the engine of
:class:`musiceval.protocols.choice.ChoiceProtocol` and of ``musiceval score choice``
(:meth:`musiceval.protocols.choice.ChoiceProtocol.score_report` documents the output).

:func:`choice_records` turns the :class:`~musiceval.data.answers.AnswerSet` a registered format
read (:mod:`musiceval.data.formats_builtin`) into the engine's records; :func:`score_records`
matches each recorded answer to an option with the chosen matcher (:mod:`musiceval.metrics.choice`)
and returns a :class:`ChoiceResult`; :func:`generate_choice_answers` asks a live Music LM every
question of every run and returns its answers as an answer set.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from musiceval.data.answers import AnswerSet
from musiceval.data.muchomusic import ChoiceRecord
from musiceval.metrics.choice import LETTERS, UNANSWERED, choice_summary, get_matcher, run_spread
from musiceval.protocols.pairing import orphans, pairs
from musiceval.records import Item, ItemFailure, ItemScores, Response
from musiceval.vocab.choice_prompts import distractor_setting

PUBLISHED_SETTING = "all"


@dataclass
class LoadedChoices:
    """The engine's input: one :class:`~musiceval.data.muchomusic.ChoiceRecord` per (question as
    prompted, answer), and the items that could not become one."""

    records: list[ChoiceRecord] = field(default_factory=list)
    failures: list[ItemFailure] = field(default_factory=list)


def choice_records(answers: AnswerSet) -> LoadedChoices:
    """The engine's records of an answer set's (item, response) pairs, the shuffle index from
    ``meta["run"]``; the set's failures plus one per response whose item is unknown or has no
    options or no answer letter."""
    loaded = LoadedChoices(failures=list(answers.failures) + orphans(answers))
    for item, response in pairs(answers):
        if not item.choices or item.answer not in LETTERS[: len(item.choices)]:
            loaded.failures.append(ItemFailure(item.id, f"{response.condition}: item has no options or no answer letter"))
            continue
        loaded.records.append(ChoiceRecord(item, response, run=int((response.meta or {}).get("run", 0))))
    return loaded


@dataclass(frozen=True)
class ScoredChoice:
    """One record after matching: the chosen and the correct option (prompt order)."""

    item_id: str
    group: str
    condition: str
    run: int
    setting: str
    predicted: int
    correct: int
    knowledge: tuple[str, ...]
    reasoning: tuple[str, ...]
    #: the benchmark's task of the item, where the benchmark has several (AIR-Bench foundation); "" otherwise
    task: str = ""

    @property
    def row_id(self) -> str:
        """Unique within one condition: the item, plus run and setting when not the defaults."""
        suffix = (f"#run{self.run}" if self.run else "") + ("" if self.setting == PUBLISHED_SETTING else f"#{self.setting}")
        return self.item_id + suffix

    def as_row(self) -> dict:
        return {
            "item_id": self.item_id, "condition": self.condition, "run": self.run,
            "distractor_setting": self.setting,
            "predicted": LETTERS[self.predicted] if self.predicted != UNANSWERED else None,
            "answer": LETTERS[self.correct], "correct": self.predicted == self.correct,
        }


def _nan_to_none(obj):
    if isinstance(obj, dict):
        return {k: _nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, float) and math.isnan(obj):
        return None
    return obj


@dataclass
class ChoiceResult:
    """Matched records of one file plus the records that could not be scored."""

    scored: list[ScoredChoice]
    failures: list[ItemFailure]
    matcher: str
    #: the model name(s) the records carry
    model: str = "unknown"

    def select(self, condition: str = "correct", setting: str | None = None) -> list[ScoredChoice]:
        """Records of one condition; ``setting=None`` picks the published one when present."""
        rows = [s for s in self.scored if s.condition == condition]
        if setting is None:
            published = [s for s in rows if s.setting == PUBLISHED_SETTING]
            return published or rows
        return [s for s in rows if s.setting == setting]

    def item_scores(self, metric: str = "accuracy", condition: str = "correct", setting: str | None = None) -> ItemScores:
        """Per-record 0/1 values for a gate: ``accuracy`` (right) or ``ifr`` (mapped to an option).

        Ids are item ids (with ``#run<r>`` for runs after the first) so that two conditions of
        the same items pair up; groups are the items' clusters (tracks).
        """
        rows = self.select(condition, setting)
        if metric == "accuracy":
            values = [float(s.predicted == s.correct) for s in rows]
        elif metric == "ifr":
            values = [float(s.predicted != UNANSWERED) for s in rows]
        else:
            raise ValueError(f"metric must be 'accuracy' or 'ifr', got {metric!r}")
        failures = tuple(self.failures) if condition == "correct" else ()
        return ItemScores(metric=f"choice_{metric}[{self.matcher}]", ids=tuple(s.row_id for s in rows),
                          values=np.array(values, dtype=float), groups=tuple(s.group for s in rows),
                          condition=condition, failures=failures)

    def conditions(self) -> list[str]:
        return sorted({s.condition for s in self.scored})

    def metrics(self) -> dict:
        main = self.select("correct")
        out = _summary(main)
        settings = sorted({s.setting for s in self.scored if s.condition == "correct"})
        if settings and settings != [PUBLISHED_SETTING]:
            out["per_distractor_setting"] = {
                name: {k: v for k, v in _summary(self.select("correct", name)).items() if k != "per_dimension"}
                for name in settings
            }
        others = [c for c in self.conditions() if c != "correct"]
        if others:
            out["per_condition"] = {
                c: {k: v for k, v in _summary(self.select(c)).items() if k != "per_dimension"} for c in others
            }
        runs = sorted({s.run for s in main})
        if len(runs) > 1:
            per_run = [_summary([s for s in main if s.run == r])["accuracy"] for r in runs]
            out["runs"] = {"accuracy": run_spread(per_run)}
        return _nan_to_none(out)


def _summary(rows: Sequence[ScoredChoice]) -> dict:
    dimensions = {"knowledge": [s.knowledge for s in rows], "reasoning": [s.reasoning for s in rows]}
    if any(s.task for s in rows):  # a benchmark of several tasks reports accuracy per task, as its authors do
        dimensions["task"] = [(s.task,) if s.task else () for s in rows]
    summary = choice_summary([s.predicted for s in rows], [s.correct for s in rows], dimensions)
    summary.pop("n")
    return summary


def score_records(records: Sequence[ChoiceRecord], matcher: str = "muchomusic",
                  failures: Sequence[ItemFailure] = (), *, options_as_published: bool = False) -> ChoiceResult:
    """Match every record's output with the named matcher.

    An item with fewer than four options is a distractor ablation (MuChoMusic's settings,
    :func:`musiceval.vocab.choice_prompts.distractor_setting`), reported apart from the headline;
    with ``options_as_published`` every item is in the published setting, as a benchmark whose
    questions have two to four options publishes them (MMAU, MMAR, AIR-Bench foundation)."""
    match = get_matcher(matcher)
    scored = [
        ScoredChoice(
            item_id=r.item.id, group=str(r.item.group or r.item.id), condition=r.response.condition, run=r.run,
            setting=PUBLISHED_SETTING if options_as_published else distractor_setting(r.item),
            predicted=match(r.response.text, r.item.choices),
            correct=LETTERS.index(r.item.answer), knowledge=tuple(r.item.meta.get("knowledge", ())),
            reasoning=tuple(r.item.meta.get("reasoning", ())), task=str(r.item.meta.get("task") or ""),
        )
        for r in records
    ]
    models = sorted({r.response.model for r in records}) or ["unknown"]
    return ChoiceResult(scored, list(failures), matcher, model="+".join(models))


def generate_choice_answers(
    model,
    items: Sequence[Item],
    *,
    data_dir: str | Path,
    conditions: Sequence[str] = ("correct",),
    runs: int = 3,
    n_examples: int = 1,
    seed: int = 0,
    settings=None,
    cache=None,
    model_name: str = "",
    source: str = "",
) -> AnswerSet:
    """Ask a live Music LM every question of every run under each condition; its answers as the
    :class:`~musiceval.data.answers.AnswerSet` a recorded multiple-choice file gives, for
    :meth:`ChoiceProtocol.from_answers <musiceval.protocols.choice.ChoiceProtocol.from_answers>`
    (docs/extending.md, "A protocol").

    Prompts come from :func:`musiceval.vocab.choice_prompts.build_prompts` (options shuffled per
    run, ``n_examples`` in-context examples); audio, the ``random`` / ``noise`` / ``text_only``
    conditions and the response cache are those of :func:`musiceval.generate.generate_responses`,
    whose :meth:`~musiceval.generate.GenerationResult.answer_set` this reshapes: ``items[k]`` is the
    question with its options in the order ``responses[k]`` saw them (positional pairing,
    :func:`musiceval.protocols.pairing.pairs`), ``meta["run"]`` the shuffle. A chunking model answers
    once per chunk; the first chunk's answer is scored (MuChoMusic clips are short). The set's
    failures: one per unanswered (item, run, condition), its id ``<item>#run<r>``.
    """
    import dataclasses

    from musiceval.vocab.choice_prompts import build_prompts
    from musiceval.generate import generate_responses
    from musiceval.models.base import GenerationSettings

    by_id = {item.id: item for item in items}
    prompts = build_prompts(items, runs=runs, n_examples=n_examples, seed=seed)
    # One Item per (question, run): its "question" is the full prompt the model sees.
    asked = {f"{p.item_id}#run{p.run}": p for p in prompts}
    requests = [Item(id=key, question=p.prompt, audio=by_id[p.item_id].audio, group=by_id[p.item_id].group,
                     meta={k: v for k, v in by_id[p.item_id].meta.items() if k in ("audio_start", "audio_end")})
                for key, p in asked.items()]
    result = generate_responses(model, requests, conditions=conditions, data_dir=data_dir, cache=cache,
                                settings=settings or GenerationSettings(seed=seed))
    generated = result.answer_set(requests, model=model_name, source=source)
    questions, answers = [], []
    for response in generated.responses:
        if response.meta.get("chunk", 0) != 0:
            continue
        p = asked[response.item_id]
        base = by_id[p.item_id]
        meta = {**base.meta, "permutation": p.permutation}
        if p.distractor_types:
            meta["distractor_types"] = p.distractor_types
        questions.append(Item(id=p.item_id, question=base.question, audio=base.audio, choices=p.choices,
                              answer=p.answer, group=base.group or base.id, meta=meta))
        answers.append(Response(item_id=p.item_id, condition=response.condition, model=response.model,
                                prompt=p.prompt, text=response.text, meta={**response.meta, "run": p.run}))
    return dataclasses.replace(generated, items=questions, responses=answers)
