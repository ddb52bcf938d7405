"""Multiple-choice QA (MuChoMusic) as a :class:`~musiceval.protocols.base.Protocol`.

Wraps :func:`musiceval.protocols.choice.engine.score_records`:

- ``accuracy``: 1 when the matched option is the correct one (headline; an unanswered output
  counts wrong and is listed in the failures as ``unparsed: ...``);
- ``parse_rate``: 1 when the output maps to an option (MuChoMusic's instruction-following rate, IFR).

Conditions are the ones recorded in the file (``correct`` and controls such as ``text_only``,
``noise``, ``random``); a multiple-choice file has no derived Random (each question differs).
The published setting (all three distractors) is scored when present. Chance: the strongest
answer-blind strategy, each its own gate: a uniform guess among the options (1/4, exact binomial),
the best constant answer and the answer permutation (the file's own chosen options moved to
questions about other tracks), both paired by item. Without a recorded control the answer
permutation is also the evidence that the model listens (:meth:`ChoiceProtocol.answer_permutation`).
Where a track has several questions (MuChoMusic, MMAU), the question control moves each answer's
text to another question about the same track and matches it against that question's options with
the matcher in force (a letter "B" picks that question's option B):
:meth:`ChoiceProtocol.question_permutation`, the evidence that the model answers the question.

Options (``settings.options``): ``matcher`` (``"muchomusic"``, the published rule, or ``"strict"``).
"""
from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from musiceval.data.answers import AnswerSet
from musiceval.keys import Key
from musiceval.metrics.choice import answer_permutation_accuracy, best_constant_answer
from musiceval.protocols.pairing import model_name
from musiceval.protocols.base import (PARSE_RATE, QUESTION_PERMUTATION, Chance, MetricInfo, Protocol, ProtocolSettings,
                                      register_protocol)
from musiceval.data.errors import InputError
from musiceval.protocols.scoring import ScoreReport, chance_rows, declared_scales, headline_scores
from musiceval.ranges import AT_LEAST_ONE, SHARE, Range
from musiceval.records import ItemFailure, ItemScores
from musiceval.stats.scales import BINARY, Scale
from musiceval.schemas import LETTERS, UNANSWERED


def _matchers() -> list[str]:
    """The registered answer matchers (a plugin's too), read when a config or flag is checked."""
    from musiceval.metrics.choice import MATCHERS

    return sorted(MATCHERS.names())


@register_protocol
class ChoiceProtocol(Protocol):
    name = "choice"
    headline = "accuracy"
    answer_file = "a multiple-choice answer file"
    config_keys = {
        "min_parse_rate": Key((int, float), 0.90, "instruction-following rate: share of answers mapped to an option", SHARE),
        "matcher": Key(str, "muchomusic", "answer matcher: muchomusic (the published rule) or strict", choices=_matchers),
        "runs": Key(int, 3, "live runs with different option shuffles (averaged)", AT_LEAST_ONE),
        "n_examples": Key(int, 1, "live in-context examples per prompt", Range(0, 5, integer=True)),
    }
    options_from_config = ("matcher",)
    answer_options = {
        "matcher": Key(str, "muchomusic", "answer matcher: 'muchomusic' (the published rule), 'strict' (letter tokens "
                                          "only) or a registered one", choices=_matchers),
        "options_as_published": Key(bool, False, "every item counts in the headline with the options it was published "
                                                 "with (two to four: MMAU, MMAR, AIR-Bench foundation); without it an "
                                                 "item with fewer than four is a MuChoMusic distractor ablation, "
                                                 "reported apart", switch=True),
    }
    score_help = "multiple-choice QA (MuChoMusic): accuracy, IFR and unanswered rate, per dimension"

    @classmethod
    def component_versions(cls) -> dict[str, str]:
        from musiceval.metrics.choice import MATCHER_VERSION

        return {"choice_matcher": str(MATCHER_VERSION)}

    def __init__(self, result, records, *, failures=(), model: str = "model", source: str = "", seed: int = 0):
        self.seed = seed
        #: the wrapped :class:`musiceval.protocols.choice.engine.ChoiceResult`
        self.result = result
        self.records = list(records)
        self._failures = list(failures)
        self.model = model
        self.source = source
        #: row id -> (record, scored) per condition
        self._rows: dict[str, dict[str, tuple[Any, Any]]] = {}
        for rec, s in zip(self.records, result.scored):
            self._rows.setdefault(s.condition, {})[s.row_id] = (rec, s)

    @classmethod
    def from_answers(cls, answers: AnswerSet, settings: ProtocolSettings | None = None) -> "ChoiceProtocol":
        from musiceval.protocols.choice.engine import choice_records, score_records

        settings = settings or ProtocolSettings()
        matcher = str(settings.options.get("matcher", "muchomusic"))
        loaded = choice_records(answers)
        result = score_records(loaded.records, matcher, loaded.failures,
                               options_as_published=bool(settings.options.get("options_as_published", False)))
        return cls(result, loaded.records, failures=loaded.failures, model=model_name(answers), source=answers.source,
                   seed=settings.seed)

    def score_report(self, answers: AnswerSet) -> ScoreReport:
        """``musiceval score choice``: ``metrics`` has ``accuracy``, ``ifr`` (= ``parse_rate``),
        ``unanswered`` and ``per_dimension`` on Correct in the published setting (all three distractors;
        every record when the file holds only ablations), with ``per_distractor_setting`` and ``runs``
        (accuracy mean, std, min, max over shuffles) when the file holds them; ``matcher`` names the rule."""
        if not answers.responses and not answers.failures:
            raise InputError(f"{answers.source}: no records; expected recorded answers in the {answers.format!r} layout")
        failures = [{"item_id": f.item_id, "error": f.reason} for f in self.result.failures]
        metrics = self.result.metrics()
        metrics["parse_rate"] = metrics.get("ifr")
        conditions = metrics.pop("per_condition", {})  # text_only, noise, random: beside Correct
        headline = headline_scores(self) if "correct" in self.conditions else {}
        return ScoreReport(len(self.result.select("correct")), metrics, conditions=conditions, failures=failures,
                           per_item=[s.as_row() for s in self.result.scored] + failures, headline=headline,
                           chances=chance_rows(self, headline), scales=declared_scales(self, headline),
                           extra={"matcher": self.result.matcher, "format": answers.format, "model": self.model})

    # ------------------------------------------------------------------ interface

    @property
    def conditions(self) -> tuple[str, ...]:
        present = self.result.conditions()
        return tuple(["correct"] * ("correct" in present) + [c for c in present if c != "correct"])

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("accuracy", PARSE_RATE)

    @property
    def failures(self) -> list[ItemFailure]:
        return list(self._failures)

    def metric_info(self, metric: str) -> MetricInfo:
        if metric == "accuracy":
            return MetricInfo("accuracy", True, "accuracy (0-1)", "the matched option is the correct one", scale=BINARY)
        if metric == PARSE_RATE:
            return MetricInfo(PARSE_RATE, True, "share of outputs mapped to an option (0-1)", "MuChoMusic's IFR",
                              scale=BINARY)
        return super().metric_info(metric)

    def scores(self, metric: str, condition: str = "correct") -> ItemScores:
        self.check(metric, condition)
        base = self.result.item_scores("accuracy" if metric == "accuracy" else "ifr", condition)
        failures = list(base.failures)
        if metric == "accuracy":
            failures += [ItemFailure(s.row_id, f"unparsed: no option named, counted wrong ({condition})")
                         for s in self.result.select(condition) if s.predicted == UNANSWERED]
        return ItemScores(metric=metric, ids=base.ids, values=base.values, groups=base.groups, condition=condition,
                          failures=tuple(failures))

    def _correct_rows(self) -> list[tuple[Any, Any]]:
        """``(record, scored)`` of every Correct row, in row-id order (never file order)."""
        rows = self._rows.get("correct", {})
        return [rows[s.row_id] for s in sorted(self.result.select("correct"), key=lambda s: s.row_id)]

    def chances(self, metric: str) -> tuple[Chance, ...]:
        """Accuracy's answer-blind strategies: a uniform guess among each item's options (exact
        binomial), the best constant answer (always the same position) and the answer permutation
        (the file's own chosen positions moved to items of other tracks), both paired by item."""
        if metric != "accuracy":
            return ()
        rows = self._correct_rows()
        if not rows:
            return ()
        sizes = [len(rec.item.choices) for rec, _ in rows]
        value = float(np.mean([1.0 / k for k in sizes]))
        label = f"1/{sizes[0]}" if len(set(sizes)) == 1 else f"{value:.3f}"
        out = [Chance("fixed", value, name=f"uniform chance {label}",
                      description="a uniform guess among the options (exact binomial test)")]
        if len(rows) < 2:
            return tuple(out)
        ids, groups = [s.row_id for _, s in rows], [s.group for _, s in rows]
        letter, hits = best_constant_answer([s.correct for _, s in rows], sizes)
        constant = ItemScores("accuracy", ids, hits, groups=groups, condition="best constant answer")
        out.append(Chance("baseline", constant.mean(), name="best constant answer", scores=constant,
                          description=f"always answering ({LETTERS[letter]}), the most frequent correct letter"))
        permuted = self.answer_permutation("accuracy")
        if permuted is not None:
            out.append(Chance("baseline", permuted.mean(), name="answer permutation", scores=permuted,
                              description="the file's own chosen options moved to questions about other tracks"))
        return tuple(out)

    def scale(self, metric: str, condition: str = "correct") -> Scale | None:
        """The answer permutation scores each item by its expected accuracy over the other tracks'
        answers (:func:`~musiceval.metrics.choice.answer_permutation_accuracy`): in [0, 1], not 0/1."""
        declared = super().scale(metric, condition)
        return declared.averaged() if condition == "answer permutation" and declared is not None else declared

    def answer_permutation(self, metric: str) -> ItemScores | None:
        if metric != "accuracy":
            return None
        rows = self._correct_rows()
        if len(rows) < 2:
            return None
        values = answer_permutation_accuracy([s.predicted for _, s in rows], [s.correct for _, s in rows],
                                             [s.group for _, s in rows])
        if values is None:
            return None
        return ItemScores("accuracy", [s.row_id for _, s in rows], values, groups=[s.group for _, s in rows],
                          condition="answer permutation")

    def question_items(self) -> tuple[tuple[str, str, str], ...]:
        """Every Correct row: its id, its track (plus the run: a move stays within one run's option
        order) and its question."""
        return tuple((s.row_id, s.group + (f"#run{s.run}" if s.run else ""), rec.item.question)
                     for rec, s in self._correct_rows())

    def question_permutation(self, metric: str) -> ItemScores | None:
        """Accuracy when each answer's text is moved to another question about the same track and
        matched against THAT question's options by the matcher in force (a letter answer "B" picks
        that question's option B; an answer naming none of its options is wrong), paired by item."""
        if metric != "accuracy":
            return None
        partners = self.question_partners()
        if not partners.enough:
            return None
        from musiceval.metrics.choice import get_matcher

        match = get_matcher(self.result.matcher)
        rows = {s.row_id: (rec, s) for rec, s in self._correct_rows()}
        ids = list(partners.partner)
        values = [float(match(rows[partners.partner[i]][0].response.text, rows[i][0].item.choices) == rows[i][1].correct)
                  for i in ids]
        return ItemScores("accuracy", ids, values, groups=[rows[i][1].group for i in ids], condition=QUESTION_PERMUTATION)

    def samples(self) -> Iterator[dict[str, Any]]:
        for condition in self.conditions:
            for s in self.result.select(condition):
                rec, _ = self._rows[condition][s.row_id]
                parsed = LETTERS[s.predicted] if s.predicted != UNANSWERED else None
                yield {"item_id": s.row_id, "condition": condition, "prompt": rec.response.prompt or rec.item.question,
                       "answer": rec.response.text, "parsed": parsed, "reference": LETTERS[s.correct],
                       "scores": {"accuracy": float(s.predicted == s.correct), PARSE_RATE: float(s.predicted != UNANSWERED)}}
