"""One interface for every protocol: built from items, responses per condition and settings.

A :class:`Protocol` (free-form, factual, multiple choice, MIR task, text-encoder triplets) turns
the answers of one model on one dataset into per-item scores. The ``musiceval score`` CLI and the
gates in ``evals/`` both call it, so a number printed by the CLI and the number a gate tests come
from one code path.

- ``conditions``: the conditions with responses (``correct`` plus controls such as ``random``,
  ``noise``, ``text_only``, ``silence``; free-form adds ``skyline`` and ``adversarial``);
- ``metrics``: the metric names it scores; :meth:`Protocol.metric_info` says which way is better;
- :meth:`Protocol.scores` -> :class:`~musiceval.records.ItemScores` paired by item id, with track
  groups, and the items that could not be scored (or were scored by an imputation rule, such as an
  unparsed answer counted wrong) as failures with their reason;
- :meth:`Protocol.evaluate` -> ``{metric: value, ..., "n": .., "n_failed": .., "failures": [..]}``
  (mir_eval's shape: an ordered dict of the headline numbers on the Correct condition), plus
  ``"excluded"``: the items a named rule left out, counted per rule and never as failures
  (:meth:`Protocol.exclusions`, :mod:`musiceval.exclusions`);
- :meth:`Protocol.chances` -> the chance levels a metric is gated against: the strongest
  answer-blind strategies (docs/gate-your-model.md, "What the verdict means": a uniform guess, the best constant
  answer, the file's own answers moved to other items, a task's trivial baselines);
- :meth:`Protocol.answer_permutation` -> the answers moved to other items and scored against each
  item, paired by item: the evidence that the model listens when no control was recorded;
- :meth:`Protocol.question_permutation` -> the answers moved to other questions about the same
  clip (:func:`musiceval.conditions.question_derangement`) and scored against each item with the
  protocol's own scorer, paired by item: the evidence that the model answers the question;
- :meth:`Protocol.samples` -> one dict per scored answer for the per-sample drill-down.

Every protocol class is registered in :data:`PROTOCOLS` by name (``@register_protocol``), except the
live path's synthesised questions (:mod:`musiceval.protocols.synth`): they read no answer file and
only their own release gates build them.
"""
from __future__ import annotations

import abc
import math
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterator, Mapping

import numpy as np

from musiceval.conditions import QuestionPartners, question_derangement
from musiceval.exclusions import Exclusion, summarize
from musiceval.keys import GATE_KEYS, SOURCE_KEYS, Key
from musiceval.protocols.scoring import (  # noqa: F401  (ProtocolSettings: imported from here too)
    ProtocolSettings, ScoreReport, ScoreRequest, answers_report, evaluated_report)
from musiceval.records import Accounting, ItemFailure, ItemScores
from musiceval.registry import Registry
from musiceval.stats.scales import BINARY, Scale

#: control conditions: the model hears something other than the item's audio (or nothing)
CONTROL_CONDITIONS = ("random", "noise", "text_only", "silence")
#: the metric every protocol scores for "could the answer be read at all" (IFR, generalised)
PARSE_RATE = "parse_rate"
#: the condition label of the question control (:meth:`Protocol.question_permutation`)
QUESTION_PERMUTATION = "question permutation"


@dataclass(frozen=True)
class MetricInfo:
    """What a metric's numbers mean: direction and units, shown beside every gate."""

    name: str
    higher_is_better: bool = True
    #: e.g. "accuracy (0-1)", "WER (fraction of reference words)", "cosine (-1..1)"
    unit: str = ""
    description: str = ""
    #: "gate" (compared by a release gate by default) or "finding" (recorded with its interval,
    #: never failing; e.g. the n-gram metrics' Correct vs Random, the paper's negative result).
    #: The suite config can promote a finding to a gate and back.
    role: str = "gate"
    #: what one item's value is: 0/1 outcomes (:data:`~musiceval.stats.scales.BINARY`) or a number
    #: in a known range (:data:`~musiceval.stats.scales.UNIT`, :func:`~musiceval.stats.scales.bounded`,
    #: :data:`~musiceval.stats.scales.SECONDS`). Every gate passes it down: it, not the values, picks a
    #: proportion's interval (exact binomial, McNemar) and bounds the interval
    #: (docs/regression-gates.md, "Binary or continuous: the metric declares it"). None: not declared
    #: (a plugin's metric), read from the values, and the gate result says so.
    scale: Scale | None = None


@dataclass(frozen=True)
class Chance:
    """The chance level a metric is compared with.

    ``kind``:

    - ``"fixed"``: a known rate (``value``), e.g. 1/4 for four options; 0/1 metrics use an exact
      binomial test against it;
    - ``"permutation"``: the metric's mean when predictions are permuted across items
      (``null`` holds the permuted means; ``value`` their mean);
    - ``"baseline"``: a trivial predictor scored per item (``scores``: majority class, mean
      predictor, metronome ...), compared paired by item; ``value`` its mean.
    """

    kind: str
    value: float
    #: what the level is, in the chance gate's name and detail: "uniform chance 1/4", "majority-class baseline" ...
    name: str = "chance"
    description: str = ""
    null: np.ndarray | None = None
    scores: ItemScores | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("fixed", "permutation", "baseline"):
            raise ValueError(f"chance kind must be fixed, permutation or baseline, got {self.kind!r}")


class Protocol(abc.ABC):
    """Base class of every protocol; see the module docstring."""

    #: registry name, e.g. "choice"
    name: ClassVar[str] = ""
    #: the metric reported first and gated against chance; "the model listens" and "the model
    #: answers the question" gate it, so its role is "gate" (:func:`check_headline`)
    headline: ClassVar[str] = ""

    # ---- what the rest of musiceval reads from the class (the protocol declares itself once) ----
    #: the answer file the protocol reads, in words ("a multiple-choice answer file"), for the
    #: messages that name a fix; empty for a protocol that reads no answer file (triplets)
    answer_file: ClassVar[str] = ""
    #: the sub-folder of the run's cache root (``pytest --musiceval-cache-dir``) given to it as its
    #: ``cache_dir`` option (:mod:`musiceval.cache_dir`: ``embeddings``, ``judge``)
    cache_folder: ClassVar[str] = "embeddings"
    #: its ``parse_rate`` counts the scorer's own replies (an LLM judge's), not the model's answers: it is
    #: gated among the scorer's self-checks, so a judge that cannot be read makes the verdict ERROR,
    #: never the model's FAILED (docs/judge.md)
    parse_rate_of_scorer: ClassVar[bool] = False
    #: its own keys in its section of the suite config (``[choice]``), beside the gate keys every
    #: answer protocol has (:data:`musiceval.keys.GATE_KEYS`)
    config_keys: ClassVar[Mapping[str, Key]] = {}
    #: the keys of that section passed to :meth:`from_answers` as options
    options_from_config: ClassVar[tuple[str, ...]] = ()
    #: the options one ``[[model.answers]]`` entry may set (passed as options too)
    answer_options: ClassVar[Mapping[str, Key]] = {}
    #: the flags of ``musiceval score NAME`` beyond the common ones, one ``--key`` per key (docs/extending.md,
    #: "Score flags and output"); None: the :attr:`answer_options` (the keys an answers entry sets)
    score_flags: ClassVar[Mapping[str, Key] | None] = None
    #: one line for ``musiceval score --help`` (default: the class docstring's first line)
    score_help: ClassVar[str] = ""

    #: label of the model that answered (from the answer file or the suite config)
    model: str = "model"
    #: control conditions derived from the answers themselves rather than recorded (the Random
    #: of recorded answers to a shared prompt: another clip's answer, an answer permutation)
    derived: tuple[str, ...] = ()
    #: where the answers came from (file name, live spec); shown in gate names and the report
    source: str = ""
    #: the run seed every pairing the protocol draws itself is seeded from (the question control)
    seed: int = 0
    # ---- what the suite records when it builds the protocol from a declared answer source
    # (:func:`musiceval.suite.runs.build_protocol`); None or empty for a protocol built by hand ----
    #: sha256 of what the answers are scored against (:func:`musiceval.suite.runs.items_fingerprint`)
    items_sha256: str | None = None
    #: where every line of the answer file went (the readable and coverage gates)
    accounting: Accounting | None = None
    #: sampled answers: scored item id ``<id>#r<k>`` -> the item it repeats, and the Correct answer
    #: text of each repeat (:mod:`musiceval.suite.repeats`)
    repeat_of: Mapping[str, str] = {}
    repeat_texts: Mapping[str, str] = {}

    @property
    @abc.abstractmethod
    def conditions(self) -> tuple[str, ...]:
        """Conditions with responses, ``correct`` first."""

    @property
    @abc.abstractmethod
    def metrics(self) -> tuple[str, ...]:
        """Metric names :meth:`scores` accepts (includes :data:`PARSE_RATE` for every protocol
        that reads model answers)."""

    @abc.abstractmethod
    def scores(self, metric: str, condition: str = "correct") -> ItemScores:
        """Per-item scores of ``metric`` under ``condition``, paired by item id."""

    @classmethod
    def task_of(cls, path: Path) -> str:
        """The task an answer file holds, for a protocol with several per file name (CMI-Bench's
        ``<model>_<task>.jsonl``); ``""`` for the others."""
        return ""

    @classmethod
    def label_of(cls, path: Path) -> str:
        """The source label an answer file gets when its entry names none: the task, with the file's
        variant where the name gives one (CMI-Bench's ``<model>_<task>_test_available.jsonl``)."""
        return cls.task_of(path)

    @classmethod
    def options_from(cls, section: Mapping[str, Any], entry: Mapping[str, Any], task: str = "") -> dict[str, Any]:
        """The options :meth:`from_answers` receives for one answers entry: the keys of the protocol's
        config ``section`` named in :attr:`options_from_config` (unset ones left out), overlaid with
        the entry's own options (:data:`~musiceval.keys.SOURCE_KEYS` are the suite's, not the protocol's)."""
        options = {k: section[k] for k in cls.options_from_config if section.get(k) not in ("", [], None)}
        options.update({k: v for k, v in entry.items() if k not in SOURCE_KEYS})
        return options

    @classmethod
    def component_versions(cls) -> dict[str, str]:
        """The version of each piece of code that turns answers into scores (parser, matcher,
        metric formulas): the scorer side of a run's provenance. Bump one when its scores change."""
        return {}

    @classmethod
    def scorer(cls, section: Mapping[str, Any]) -> dict[str, Any]:
        """What of the protocol's config ``section`` decides its scores beyond its code (an LLM
        judge's model, prompt and decoding): recorded on the scorer side of every run's provenance,
        so two runs scored differently are refused as not comparable. An ``unpinned`` entry (why
        that scorer can change under its name) is named on the verdict line. Default: nothing."""
        return {}

    @classmethod
    def from_answers(cls, answers: Any, settings: ProtocolSettings | None = None) -> "Protocol":
        """Build the protocol from an :class:`~musiceval.data.answers.AnswerSet` (see
        :func:`musiceval.data.formats.load_answers`) and its settings."""
        raise TypeError(f"protocol {cls.name!r} is not built from an answer file")

    # ------------------------------------------------------------------ musiceval score

    @classmethod
    def score(cls, request: ScoreRequest) -> ScoreReport:
        """``musiceval score NAME`` (docs/extending.md, "Score flags and output"): by default load the
        answer file, :meth:`from_answers` with the score flags as options, then :meth:`score_report`.
        Override it for a protocol that reads its input another way (the triplets probe a text encoder)."""
        if not cls.answer_file:
            from musiceval.data.errors import InputError

            raise InputError(f"score {cls.name}: {reads_no_answer_file(cls)}")
        return answers_report(cls, request)

    def score_report(self, answers: Any) -> ScoreReport:
        """The numbers ``musiceval score`` prints of this run of ``answers``: by default
        :meth:`evaluate` on Correct, each control condition beside it, with :meth:`score_extra`'s keys
        and :meth:`score_rows`'s per-item rows."""
        return evaluated_report(self, answers)

    def score_extra(self) -> dict[str, Any]:
        """The protocol's own top-level keys of ``musiceval score --json`` (default: none)."""
        return {}

    def score_rows(self) -> list[dict[str, Any]]:
        """The rows ``musiceval score --per-item`` writes, one dict per item with ``item_id`` (default: none)."""
        return []

    # ------------------------------------------------------------------ defaults

    @property
    def failures(self) -> list[ItemFailure]:
        """Items that could not be read at all (file-level per-item failures)."""
        return []

    def exclusions(self) -> tuple[Exclusion, ...]:
        """Items a named rule left out, of every condition or of some (:mod:`musiceval.exclusions`):
        not scored there, and not failures either. A gate pairing two conditions does not count an
        item left out of one of them as a failure."""
        return ()

    def controls(self) -> tuple[str, ...]:
        """The control conditions present (recorded or derived), in :data:`CONTROL_CONDITIONS` order."""
        return tuple(c for c in CONTROL_CONDITIONS if c in self.conditions)

    def recorded_controls(self) -> tuple[str, ...]:
        """The control conditions the answers hold (the model heard random audio, noise, silence or nothing)."""
        return tuple(c for c in self.controls() if c not in self.derived)

    def answer_permutation(self, metric: str) -> ItemScores | None:
        """``metric`` when each answer is moved to other items and scored there, per item (paired
        by item id, condition ``"answer permutation"``), or None. Answers that ignore the audio
        score the same in place as moved. Default: the derived Random (another clip's answer to the
        same prompt, scored against this item)."""
        if "random" in self.derived and metric in self.metrics:
            s = self.scores(metric, "random")
            return ItemScores(s.metric, s.ids, s.values, groups=s.groups, condition="answer permutation",
                              failures=s.failures)
        return None

    def question_items(self) -> tuple[tuple[str, str, str], ...]:
        """``(item id, clip, question)`` of every Correct answer the question control may move: the
        clip is what a move stays within (the item's group; a protocol that asks each question in
        several runs adds the run). Default: none (no protocol-specific scorer for a moved answer)."""
        return ()

    def question_partners(self) -> QuestionPartners:
        """Each item's partner: another question about the same clip, a seeded derangement within
        the clip (:func:`musiceval.conditions.question_derangement`); items without one are counted."""
        cached = self.__dict__.get("_question_partners")
        if cached is None:  # the answers of a built protocol do not change: drawn once
            rows = self.question_items()
            cached = question_derangement([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], self.seed)
            self.__dict__["_question_partners"] = cached
        return cached

    def question_permutation(self, metric: str) -> ItemScores | None:
        """``metric`` when each item's Correct answer is replaced by the answer the model gave to
        another question about the same clip (:meth:`question_partners`), scored against THIS item
        with the protocol's own scorer, per item (paired by item id, condition
        :data:`QUESTION_PERMUTATION`, grouped by clip); items without a partner are left out.
        docs/gate-your-model.md, "What the verdict means": answers that ignore the question score the
        same in place as moved. None when fewer than :data:`~musiceval.conditions.MIN_QUESTION_ITEMS` items on
        :data:`~musiceval.conditions.MIN_QUESTION_CLIPS` clips have a partner, or the protocol
        cannot score a moved answer (the default)."""
        return None

    def metric_info(self, metric: str) -> MetricInfo:
        if metric == PARSE_RATE:
            return MetricInfo(PARSE_RATE, True, "share of answers the parser could read (0-1)", scale=BINARY)
        return MetricInfo(metric)

    def chances(self, metric: str) -> tuple[Chance, ...]:
        """The chance levels and trivial baselines ``metric`` is gated against (may be empty)."""
        return ()

    def scale(self, metric: str, condition: str = "correct") -> Scale | None:
        """What one item's value of ``metric`` under ``condition`` is (:mod:`musiceval.stats.scales`):
        the metric's declaration (:attr:`MetricInfo.scale`), unless a derived condition scores an
        item otherwise (an answer permutation averaged over other items' answers gives an expected
        accuracy, not a 0/1 outcome). The gates compare two conditions on the join of their scales
        (:meth:`~musiceval.stats.scales.Scale.join`)."""
        return self.metric_info(metric).scale

    def check(self, metric: str, condition: str = "correct") -> None:
        """Raise ``KeyError`` naming the choices when ``metric``/``condition`` is unknown."""
        if metric not in self.metrics:
            raise KeyError(f"{self.name}: unknown metric {metric!r}; choose from {', '.join(self.metrics)}")
        if condition not in self.conditions:
            raise KeyError(f"{self.name}: no responses under condition {condition!r} (have {', '.join(self.conditions)})")

    def evaluate(self) -> dict[str, Any]:
        """mir_eval's shape: metric -> mean on Correct, then ``n``, ``n_failed``, ``failures`` (and
        ``notes``: metric -> why it is NaN, when a model or input it needs is absent)."""
        out: dict[str, Any] = OrderedDict()
        failed: dict[str, str] = {f.item_id: f.reason for f in self.failures}
        n = 0
        notes: dict[str, str] = {}
        for metric in self.metrics:
            try:
                s = self.scores(metric, "correct")
            except (FileNotFoundError, ValueError) as exc:  # a model or input the metric needs is absent
                out[metric], notes[metric] = math.nan, str(exc)
                continue
            out[metric] = s.mean() if s.n else math.nan
            n = max(n, s.n)
            for f in s.failures:
                failed.setdefault(f.item_id, f.reason)
        out["n"] = n
        out["n_failed"] = len(failed)
        out["failures"] = [{"item_id": i, "reason": r} for i, r in failed.items()]
        if notes:
            out["notes"] = notes
        return with_exclusions(out, self.exclusions())

    def samples(self) -> Iterator[dict[str, Any]]:
        """Per scored answer: ``item_id``, ``condition``, ``prompt``, ``answer``, ``parsed``,
        ``reference`` and the per-metric scores. Protocols override it with their fields."""
        return iter(())


def with_exclusions(out: dict[str, Any], exclusions: tuple[Exclusion, ...]) -> dict[str, Any]:
    """``out`` with ``"excluded"`` (:func:`musiceval.exclusions.summarize`) when a rule left items out."""
    if exclusions:
        out["excluded"] = summarize(exclusions)
    return out


PROTOCOLS: Registry[type[Protocol]] = Registry(
    "protocol",
    builtin_modules=(
        "musiceval.protocols.choice",
        "musiceval.protocols.factual",
        "musiceval.protocols.freeform",
        "musiceval.protocols.judge",
        "musiceval.protocols.mir",
        "musiceval.protocols.triplets",
    ),
    entry_point_group="musiceval.protocols",
)


def register_protocol(cls: type[Protocol]) -> type[Protocol]:
    """Class decorator: register a :class:`Protocol` subclass under its ``name``: the suite config,
    ``musiceval score <name>``, the release gates, regression and provenance read it from here."""
    if not cls.name:
        raise ValueError(f"{cls.__name__}: set the class attribute 'name' before registering it")
    if cls.answer_file and cls.from_answers.__func__ is Protocol.from_answers.__func__:  # type: ignore[attr-defined]
        raise ValueError(f"{cls.__name__}: a protocol that reads an answer file ({cls.answer_file}) implements from_answers")
    PROTOCOLS.register(cls.name, cls, replace=True)
    return cls


class ProtocolError(ValueError):
    """A registered protocol class that cannot take part as declared (one line: the class and the fix)."""


def reads_no_answer_file(cls: type[Protocol]) -> str:
    """Why protocol class ``cls`` has no config section, answers entry or ``musiceval score``
    scorer, and the fix: it sets no :attr:`Protocol.answer_file` (docs/extending.md, "A protocol")."""
    return (f"the {cls.name!r} protocol reads no answer file ({cls.__name__} sets no answer_file): a protocol that "
            "scores answer files sets its class attribute answer_file (the file it reads, in words) and implements "
            "from_answers (docs/extending.md, \"A protocol\")")


def check_headline(run: Protocol) -> None:
    """Refuse (:class:`ProtocolError`) a protocol whose headline metric is a finding: the headline is
    what "the model listens" and "the model answers the question" gate (docs/gate-your-model.md),
    while a finding is recorded with its interval and never fails a release (:attr:`MetricInfo.role`);
    the two cannot both hold, and neither may win silently."""
    if run.metric_info(run.headline).role != "finding":
        return
    raise ProtocolError(f"{type(run).__name__} (protocol {run.name!r}): its headline {run.headline!r} has "
                        "role='finding' in metric_info, but the headline is what the release gates 'the model "
                        "listens' and 'the model answers the question' test; make a metric with role='gate' the "
                        f"headline, or give {run.headline!r} role='gate' (a [checks] rule of the suite config can "
                        "still make one of its checks a finding)")


def answer_protocols() -> dict[str, type[Protocol]]:
    """Every registered protocol that reads answer files (builtins and plugins), by name."""
    return {name: cls for name, cls in PROTOCOLS.items() if cls.answer_file}


def config_section(cls: type[Protocol]) -> dict[str, Key]:
    """The keys of a protocol's section of the suite config: the gate keys, then its own."""
    return {**GATE_KEYS, **cls.config_keys}
