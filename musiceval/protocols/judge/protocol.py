"""Open-ended answers judged by an LLM against the reference, as a
:class:`~musiceval.protocols.base.Protocol` (docs/judge.md).

Reads the free-form answer files (answers with references) and the multiple-choice ones (the
correct option is the reference, the options are shown with the question). The judge
(:mod:`.engine`) reads each answer beside its item's question and reference: pointwise
(CORRECT/INCORRECT), pairwise (the answer against the reference, both seats), rubric (AIR-Bench's
rule: the answer and the reference each scored 1-10, with the item's audio description, both
seats) or mmau-pro (MMAU-Pro's open-ended rule: the answer scored 1-5 against the reference).
Metrics:

- ``judge_score`` (the headline): the item's judged score (pointwise: the share of CORRECT
  verdicts over the judge's samples; pairwise: win 1, tie 1/2, loss 0 against the reference;
  rubric: the answer's 1-10 score, the mean of its two seats; mmau-pro: the answer's 1-5 score);
- ``parse_rate``: the share of the item's judge replies the parser could read. An item with no
  readable reply is a failure of ``judge_score`` with its reply kept, never a 0.

Controls, each judged like the answers: the file's recorded controls (random audio, noise, text
only, silence); the answers moved to other items (a seeded derangement that never pairs two items
of one clip), which is both the chance level ("beats the answers moved to other items") and, when
no control was recorded, "the model listens"; the question control where the file asks several
questions per clip. The judge's own checks (:meth:`JudgeProtocol.audit`) are in :mod:`.gates`.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from musiceval.cache_dir import JUDGE
from musiceval.data.answers import AnswerSet
from musiceval.keys import Key
from musiceval.protocols.pairing import model_name, orphans, pairs
from musiceval.protocols.base import (PARSE_RATE, QUESTION_PERMUTATION, Chance, MetricInfo, Protocol,
                                      ProtocolSettings, register_protocol)
from musiceval.protocols.judge.engine import (JUDGING, MODES, PARSER_VERSION, Judge, Judged, JudgeSettings,
                                              JudgeUnpinned, adapter_revision, judge_items, mode_help)
from musiceval.protocols.scoring import ScoreReport, ScoreRequest, answers_report
from musiceval.ranges import AT_LEAST_ONE, NON_NEGATIVE, SHARE
from musiceval.records import Item, ItemFailure, ItemScores
from musiceval.stats.scales import BINARY, UNIT

SCORE = "judge_score"
MOVED = "answer permutation"
#: the condition of the judge's own listening check: the item's reference read as the answer, and
#: another clip's reference read as the answer
REFERENCE_IN_PLACE, REFERENCE_MOVED = "reference in place", "reference moved"


def _option(item: Item) -> int | None:
    """The index of a multiple-choice item's correct option, None for an open question."""
    from musiceval.metrics.choice import LETTERS

    if item.choices and item.answer in LETTERS[:len(item.choices)]:
        return LETTERS.index(item.answer)
    return None


def reference_of(item: Item) -> str | None:
    """What the judge compares an answer with: the reference answer, or a multiple-choice item's
    correct option with its letter."""
    from musiceval.data.musicqa import item_references
    from musiceval.metrics.choice import LETTERS

    written = next((r for r in item_references(item) if isinstance(r, str) and r.strip()), None)
    if written is not None:
        return written
    k = _option(item)
    return None if k is None else f"({LETTERS[k]}) {item.choices[k]}"


def question_of(item: Item) -> str:
    """The question the judge reads: a multiple-choice item's with its options (the answer may be a letter)."""
    from musiceval.metrics.choice import LETTERS

    if _option(item) is None:
        return item.question
    return item.question + "\nOptions: " + " ".join(f"({LETTERS[k]}) {c}" for k, c in enumerate(item.choices))


def exact_of(item: Item, answer: str) -> float | None:
    """1/0: the answer names the item's correct option by MuChoMusic's matcher
    (:func:`musiceval.metrics.choice.match_muchomusic`); None for an open question."""
    from musiceval.metrics.choice import match_muchomusic

    k = _option(item)
    return None if k is None else float(match_muchomusic(answer, item.choices) == k)


def description_of(item: Item) -> str:
    """The item's textual description of its audio, which the rubric judge reads in place of the
    audio (AIR-Bench's ``meta_info``); "" when the item carries none."""
    value = item.meta.get("description") if item.meta else None
    return value.strip() if isinstance(value, str) else ""


def settings_of(options: Mapping[str, Any], seed: int = 0) -> JudgeSettings:
    return JudgeSettings(spec=str(options.get("model") or ""), mode=str(options.get("mode") or "pointwise"),
                         samples=int(options.get("samples", 1)), temperature=float(options.get("temperature", 0.0)),
                         max_tokens=int(options.get("max_tokens", 32)), seed=int(seed),
                         allow_unpinned=bool(options.get("allow_unpinned", False)),
                         concurrency=int(options.get("concurrency", 8)))


@register_protocol
class JudgeProtocol(Protocol):
    name = "judge"
    headline = SCORE
    #: the judge's replies: ``<cache root>/judge``, for ``pytest --musiceval-cache-dir`` and ``--cache-dir`` alike
    cache_folder = JUDGE
    #: the parse rate is the judge's: one of its own gates (:mod:`musiceval.protocols.judge.gates`)
    parse_rate_of_scorer = True
    answer_file = ("an answer file with references or correct options (the free-form and multiple-choice formats), "
                   "judged by an LLM")
    config_keys = {
        "min_parse_rate": Key((int, float), 0.8, "share of the judge's replies its parser must read", SHARE),
        "model": Key(str, "", "the judge: openai-compatible:<url>#<snapshot>, openai:<snapshot> or a model spec "
                              "(docs/judge.md)"),
        "mode": Key(str, "pointwise", mode_help(), choices=MODES),
        "samples": Key(int, 1, "judge replies per prompt (self-consistency; more than one needs temperature > 0)",
                       AT_LEAST_ONE),
        "temperature": Key((int, float), 0.0, "the judge's sampling temperature", NON_NEGATIVE),
        "max_tokens": Key(int, 32, "longest judge reply", AT_LEAST_ONE),
        "allow_unpinned": Key(bool, False, "accept a judge named by an alias (the verdict line then names it)"),
        "concurrency": Key(int, 8, "an endpoint judge's calls in flight at once", AT_LEAST_ONE),
        "cassettes": Key(str, "cassettes/judge", "folder of the judge's recorded calls, relative to the config file "
                                                 "(a folder of cassettes per answer file)"),
        "max_flip_rate": Key((int, float), 0.2, "the judge's position gate: share of items whose preference follows "
                                                "the seat, at most", SHARE),
        "min_self_consistency": Key((int, float), 0.8, "the judge's self-consistency gate: share of its samples "
                                                       "agreeing with their majority, at least", SHARE),
        "pairwise_margin": Key((int, float), 0.05, "judged against the baseline's answers, both seats: the share of "
                                                   "wins (ties half) may fall this far below 1/2", SHARE),
        "min_exact_agreement": Key((int, float), 0.8, "where the answer is known (a multiple-choice item): share of "
                                                      "items the judge and the option matcher call alike, at least",
                                   SHARE),
    }
    options_from_config = ("model", "mode", "samples", "temperature", "max_tokens", "allow_unpinned", "concurrency",
                           "cassettes")
    #: ``musiceval score judge FILE`` (docs/judge.md): the judge's keys of the ``[judge]`` section,
    #: ``--replay`` and ``--cache-dir``; the cassettes are found from the working directory
    score_flags = {**dict(zip(options_from_config, map(config_keys.get, options_from_config))),
                   "replay": Key(bool, False, "replay the recorded LLM calls only (always on CI); a call they lack is an "
                                              "error", switch=True),
                   "cache_dir": Key(str, None, "root of the on-disk caches: the judge's replies in DIR/judge, so a "
                                               "rescoring asks the judge nothing; default $MUSICEVAL_CACHE, else the "
                                               "platform cache directory", metavar="DIR")}

    @classmethod
    def score(cls, request: ScoreRequest) -> ScoreReport:
        """The default scorer with the judge's calls recorded, or with ``--replay`` (and on CI) replayed
        only (:func:`musiceval.llm.cassettes.command_mode`), and its replies cached under
        ``--cache-dir`` (default :func:`musiceval.cache_dir.default_cache_dir`)."""
        from musiceval.cache_dir import cache_folder
        from musiceval.llm.cassettes import command_mode

        options = dict(request.options)
        record = command_mode(bool(options.pop("replay", False)))
        options["cache_dir"] = str(cache_folder(options.get("cache_dir"), JUDGE))
        return answers_report(cls, replace(request, options=options), record_mode=record)

    @classmethod
    def component_versions(cls) -> dict[str, str]:
        return {"judge_parser": PARSER_VERSION, **{f"judge_template:{m}": how.template for m, how in JUDGING.items()}}

    @classmethod
    def scorer(cls, section: Mapping[str, Any]) -> dict[str, Any]:
        """The judge's identity (model, template hash, decoding, parser) and, when it is an alias the
        config allows, why it is unpinned; an alias the config does not allow is refused
        (:class:`~musiceval.protocols.judge.engine.JudgeUnpinned`)."""
        settings = settings_of(section)
        revision = adapter_revision(settings)
        reason = settings.unpinned(revision)
        if reason and not settings.allow_unpinned:
            raise JudgeUnpinned(f"{reason}; pin it, or set [judge] allow_unpinned = true (the verdict line then names "
                                "the judge as unpinned)")
        return {**settings.facts(revision), **({"unpinned": reason} if reason else {})}

    def __init__(self, judge: Judge, items: list[Item], answers: dict[str, dict[str, str]], *,
                 failures: list[ItemFailure], model: str = "model", seed: int = 0):
        self.judge = judge
        self.items = OrderedDict((i.id, i) for i in sorted(items, key=lambda i: i.id))
        self.answers = answers
        self._failures = failures
        self.model = model
        self.seed = seed
        self._judged: dict[str, dict[str, Judged]] = {}
        self._moved = self._derange([i for i in self.items if i in answers.get("correct", {})], "answers")

    @classmethod
    def from_answers(cls, answers: AnswerSet, settings: ProtocolSettings | None = None) -> "JudgeProtocol":
        settings = settings or ProtocolSettings()
        opts = settings.options
        judge_settings = settings_of(opts, settings.seed)
        cassettes = None
        if judge_settings.endpoint is not None:
            folder = Path(settings.config_dir) / str(opts.get("cassettes") or "cassettes/judge")
            cassettes = folder / Path(answers.source or "answers").stem
        judge = Judge(judge_settings, cache_dir=opts.get("cache_dir"), cassettes=cassettes,
                      record_mode=settings.record_mode)
        failures = list(answers.failures) + orphans(answers)
        items, texts = {}, {}
        for item, response in pairs(answers):
            if reference_of(item) is None:
                failures.append(ItemFailure(item.id, "no reference answer (or correct option) to judge against"))
                continue
            if item.id in texts.get(response.condition, {}):  # a second run of the item: its first is judged
                continue
            items.setdefault(item.id, item)  # the question as the first kept answer saw it (options in its order)
            texts.setdefault(response.condition, {})[item.id] = response.text
        return cls(judge, list(items.values()), texts, failures=failures, model=model_name(answers), seed=settings.seed)

    # ------------------------------------------------------------------ what is judged

    def _derange(self, ids: list[str], what: str) -> dict[str, str]:
        """item id -> the item whose text it receives: a seeded derangement never within one clip
        (empty when none exists: one clip holds more than half of the items)."""
        from musiceval.conditions import NoDerangementError, clip_avoiding_derangement, seeded_rng

        if len(ids) < 2:
            return {}
        try:
            perm = clip_avoiding_derangement([self.items[i].group or i for i in ids], seeded_rng(self.seed, f"judge/{what}"))
        except NoDerangementError:
            return {}
        return {ids[k]: ids[int(perm[k])] for k in range(len(ids))}

    def _rows(self, condition: str) -> list[tuple[str, str, str, str, str]]:
        def row(item_id: str, candidate: str) -> tuple[str, str, str, str, str]:
            item = self.items[item_id]
            return item_id, question_of(item), reference_of(item) or "", candidate, description_of(item)

        correct = self.answers.get("correct", {})
        if condition == MOVED:
            return [row(i, correct[j]) for i, j in self._moved.items()]
        if condition == QUESTION_PERMUTATION:
            return [row(i, correct[j]) for i, j in self.question_partners().partner.items()]
        if condition == REFERENCE_IN_PLACE:
            return [row(i, reference_of(self.items[i]) or "") for i in self.items]
        if condition == REFERENCE_MOVED:
            return [row(i, reference_of(self.items[j]) or "") for i, j in self._derange(list(self.items), "references").items()]
        return [row(i, text) for i, text in self.answers.get(condition, {}).items() if i in self.items]

    def judged(self, condition: str) -> dict[str, Judged]:
        """The judge's reading of every answer under ``condition`` (judged once, on first use)."""
        if condition not in self._judged:
            self._judged[condition] = {j.item_id: j for j in judge_items(self.judge, self._rows(condition))}
        return self._judged[condition]

    # ------------------------------------------------------------------ Protocol

    @property
    def conditions(self) -> tuple[str, ...]:
        return tuple(sorted(self.answers, key=lambda c: c != "correct"))

    @property
    def metrics(self) -> tuple[str, ...]:
        return (SCORE, PARSE_RATE)

    @property
    def failures(self) -> list[ItemFailure]:
        return list(self._failures)

    def metric_info(self, metric: str) -> MetricInfo:
        mode = self.judge.settings.mode
        # one reply per item (one seat, one sample) is the reply's own value; more are averaged
        one_reply = self.judge.settings.samples == 1 and not JUDGING[mode].two_seats
        if metric == SCORE:
            scale = JUDGING[mode].scale
            return MetricInfo(SCORE, True, JUDGING[mode].unit, f"LLM judge {self.judge.settings.model_id} ({mode})",
                              scale=scale if one_reply else scale.averaged())
        if metric == PARSE_RATE:
            return MetricInfo(PARSE_RATE, True, "share of the judge's replies its parser could read (0-1)",
                              scale=BINARY if one_reply else UNIT)
        return super().metric_info(metric)

    def _scores(self, metric: str, condition: str, judged: Mapping[str, Judged]) -> ItemScores:
        ids, values, failures = [], [], []
        for item_id, j in judged.items():
            if metric == PARSE_RATE:
                ids.append(item_id)
                values.append(j.parsed_share)
            elif j.score is None:
                failures.append(ItemFailure(item_id, f"{condition}: {j.failure}"))
            else:
                ids.append(item_id)
                values.append(j.score)
        groups = [self.items[i].group or i for i in ids]
        return ItemScores(metric, tuple(ids), np.asarray(values, dtype=float), groups=tuple(groups),
                          condition=condition, failures=tuple(failures))

    def scores(self, metric: str, condition: str = "correct") -> ItemScores:
        if condition not in (MOVED, QUESTION_PERMUTATION, REFERENCE_IN_PLACE, REFERENCE_MOVED):
            self.check(metric, condition)
        return self._scores(metric, condition, self.judged(condition))

    def chances(self, metric: str) -> tuple[Chance, ...]:
        moved = self.answer_permutation(metric) if metric == SCORE else None
        if moved is None:
            return ()
        return (Chance("baseline", moved.mean(), name="the answers moved to other items",
                       description="each answer judged against another clip's question and reference", scores=moved),)

    def answer_permutation(self, metric: str) -> ItemScores | None:
        if metric != SCORE or not self._moved:
            return None
        return self.scores(SCORE, MOVED)

    def question_items(self) -> tuple[tuple[str, str, str], ...]:
        correct = self.answers.get("correct", {})
        return tuple((i, item.group or i, item.question) for i, item in self.items.items() if i in correct)

    def question_permutation(self, metric: str) -> ItemScores | None:
        if metric != SCORE or not self.question_partners().enough:
            return None
        return self.scores(SCORE, QUESTION_PERMUTATION)

    def against(self, other: "JudgeProtocol") -> ItemScores:
        """The judge's preference for this run's Correct answers over ``other``'s (a baseline's), on the
        items both answered, asked pairwise in both seats whatever ``[judge] mode``: per item win 1,
        tie 1/2, loss 0 from this run's side, a tie where the seats disagree (condition
        ``"against <other's model>"``, metric ``wins``)."""
        mine, theirs = self.answers.get("correct", {}), other.answers.get("correct", {})
        rows = [(i, question_of(self.items[i]), theirs[i], mine[i]) for i in self.items if i in mine and i in theirs]
        judged = {j.item_id: j for j in judge_items(self.judge, rows, mode="pairwise")}
        return self._scores("wins", f"against {other.model}", judged)

    def audit(self) -> dict[str, Any]:
        """The judge's own evidence (docs/judge.md): its reading of the references themselves in
        place and moved to other clips (a judge that reads the answer scores them apart), and of
        the model's Correct answers: seat flips (pairwise) and sample agreement (several samples)."""
        correct = self.judged("correct").values()
        flips = [(j.item_id, 0.0 if j.flipped else 1.0) for j in correct if j.flipped is not None]
        agree = [(j.item_id, j.consistency) for j in correct if j.consistency is not None]
        exact = []  # (item, judged correct, the option matcher's correct): items whose answer is known
        if JUDGING[self.judge.settings.mode].verdicts:
            for j in correct:
                truth = exact_of(self.items[j.item_id], self.answers["correct"][j.item_id])
                if truth is not None and j.score is not None:
                    exact.append((j.item_id, float(j.score >= 0.5), truth))

        def as_scores(rows, name):
            ids = tuple(i for i, _ in rows)
            return ItemScores(name, ids, np.asarray([v for _, v in rows], dtype=float),
                              groups=tuple(self.items[i].group or i for i in ids), condition="correct")

        from musiceval.metrics.agreement import cohen_kappa

        return {"reference_in_place": self.scores(SCORE, REFERENCE_IN_PLACE),
                "reference_moved": self.scores(SCORE, REFERENCE_MOVED),
                "same_verdict_both_seats": as_scores(flips, "same_verdict_both_seats") if flips else None,
                "self_consistency": as_scores(agree, "self_consistency") if agree else None,
                "agrees_with_exact": (as_scores([(i, float(a == b)) for i, a, b in exact], "agrees_with_exact")
                                      if exact else None),
                "kappa_with_exact": (cohen_kappa(np.array([a for _, a, _ in exact]), np.array([b for _, _, b in exact]))
                                     if exact else None)}

    def samples(self) -> Iterator[dict[str, Any]]:
        for condition in self.conditions:
            for item_id, j in self.judged(condition).items():
                item = self.items[item_id]
                yield {"item_id": item_id, "condition": condition, "prompt": item.question,
                       "answer": self.answers[condition][item_id], "parsed": j.score, "reference": reference_of(item),
                       "scores": {SCORE: j.score, PARSE_RATE: j.parsed_share}, "judge_replies": list(j.replies),
                       **({"reference_score": j.reference_score} if j.reference_score is not None else {}),
                       **({"failure": j.failure} if j.failure else {})}
