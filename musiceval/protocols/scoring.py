"""What ``musiceval score <protocol>`` asks of a protocol and what the protocol hands back
(docs/extending.md, "Score flags and output"): one path for every protocol, a plugin's included.

The command (:mod:`musiceval.commands.protocol_scorer`) reads the flags the class declares
(:attr:`~musiceval.protocols.base.Protocol.score_flags`, one ``Key`` each) into a
:class:`ScoreRequest` and calls :meth:`~musiceval.protocols.base.Protocol.score`; the protocol
returns a :class:`ScoreReport`, plain data the command prints in the one JSON shape of docs/cli.md.
The default (:func:`answers_report`) loads the answer file, builds the protocol with the flags as
options and reports :meth:`~musiceval.protocols.base.Protocol.evaluate` on Correct, each control
condition beside it, and what :meth:`~musiceval.protocols.base.Protocol.score_extra` and
:meth:`~musiceval.protocols.base.Protocol.score_rows` add.

Input problems that make the whole input unusable raise
:class:`~musiceval.data.errors.InputError` (one line naming the input and the fix); one bad item is
a row of ``failures`` instead.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from musiceval.data.errors import InputError
from musiceval.records import ItemScores


@dataclass
class ProtocolSettings:
    """Settings every protocol understands; protocol-specific ones live in ``options``."""

    seed: int = 0
    #: protocol-specific settings (matcher, vocabulary, compat mode, encoders ...)
    options: Mapping[str, Any] = field(default_factory=dict)
    #: the folder the suite config's relative paths start from
    config_dir: str = "."
    #: how LLM calls made while scoring meet their vcrpy cassettes (:mod:`musiceval.llm.cassettes`):
    #: ``none`` replays only; another mode records what the cassettes lack
    record_mode: str = "none"


@dataclass(frozen=True)
class ScoreRequest:
    """One ``musiceval score <protocol>`` call: ``file`` (the positional FILE, None when not given),
    ``format`` (``--format`` as given; None: detected from the content), ``seed`` (``--seed``) and
    ``options``: every score flag's value (its ``Key``'s default when not given), except those left
    unset (``""``, ``[]``, None), as the suite config passes a section's keys."""

    file: str | None
    format: str | None
    options: Mapping[str, Any]
    seed: int = 0


@dataclass
class ScoreReport:
    """What ``musiceval score`` prints of one protocol (docs/cli.md, "One JSON shape")."""

    #: items scored (Correct)
    n: int
    #: the model's own answers (the Correct condition): ``{metric: value}``
    metrics: dict[str, Any]
    #: each control condition scored beside Correct: ``{condition: {metric: value}}``
    conditions: dict[str, Any] = field(default_factory=dict)
    #: one dict per item: at least ``item_id``; failed items carry ``error`` (the reason)
    per_item: list[dict[str, Any]] = field(default_factory=list)
    #: items that could not be scored: ``{"item_id": .., "error": ..}``
    failures: list[dict[str, Any]] = field(default_factory=list)
    #: the protocol's own top-level keys, after ``protocol`` (``task`` for mir, ``per_label`` for factual)
    extra: dict[str, Any] = field(default_factory=dict)
    #: per-item scores of each headline metric on Correct (printed with the gates' interval)
    headline: dict[str, ItemScores] = field(default_factory=dict)
    #: paired contrasts ``{metric: (ItemScores a, ItemScores b)}``, e.g. Correct vs Random
    paired: dict[str, tuple[ItemScores, ItemScores]] = field(default_factory=dict)
    #: ``{metric: [{"name", "kind", "value"}]}``: chance levels and trivial baselines (:func:`chance_rows`)
    chances: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: what was read, for a message when nothing could be scored (default: FILE)
    source: str = ""
    #: ``{metric: Scale}``: each headline metric's declared scale (:func:`declared_scales`), so the
    #: printed interval is the gate's (:mod:`musiceval.stats.scales`); a metric left out: read from the values
    scales: dict[str, Any] = field(default_factory=dict)


def resolve_format(path, fmt: str | None, protocol: str) -> str:
    """The registered answer format of ``path`` for ``protocol``: ``--format`` (a short name such
    as ``dasheng`` mapped per protocol) or detected from the content; InputError otherwise."""
    from musiceval.data.formats import FormatError, detect_format
    from musiceval.data.formats_builtin import SHORT_NAMES

    if fmt:
        return SHORT_NAMES.get(protocol, {}).get(fmt, fmt)
    try:
        return detect_format(path, protocol).name
    except (FormatError, FileNotFoundError) as exc:
        raise InputError(str(exc)) from None


def load_protocol_answers(path, fmt: str | None, protocol: str):
    """:func:`musiceval.data.formats.load_answers` for the CLI: format errors become InputError."""
    from musiceval.data.formats import FormatError, load_answers

    name = resolve_format(path, fmt, protocol)
    try:
        return load_answers(path, name, protocol)
    except (FormatError, FileNotFoundError) as exc:
        raise InputError(str(exc)) from None


def excluded_entry(protocol: Any) -> dict[str, Any]:
    """``{"excluded": {rule: {n, ids, why, conditions}}}`` of a protocol whose rules left items out
    (:mod:`musiceval.exclusions`), else ``{}``: with ``n`` and ``n_failed``, it accounts for every record."""
    from musiceval.exclusions import summarize

    found = protocol.exclusions()
    return {"excluded": summarize(found)} if found else {}


def by_condition(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """``ScoreReport`` keywords from ``{condition: {metric: value}}``: ``metrics`` (Correct's) and
    ``conditions`` (every other condition's), the one JSON shape of ``musiceval score``."""
    return {"metrics": dict(metrics.get("correct", {})),
            "conditions": {c: v for c, v in metrics.items() if c != "correct"}}


def headline_scores(protocol: Any, metrics: Iterable[str] | None = None, condition: str = "correct") -> dict[str, ItemScores]:
    """``{metric: protocol.scores(metric, condition)}`` for ``metrics`` (default: all of the
    protocol's); a metric the run could not score (absent model, not scored under ``condition``)
    is left out, its reason already in the scorer's notes/failures."""
    out: dict[str, ItemScores] = {}
    for metric in (metrics if metrics is not None else protocol.metrics):
        try:
            out[metric] = protocol.scores(metric, condition)
        except (KeyError, ValueError, FileNotFoundError):
            continue
    return out


def declared_scales(protocol: Any, metrics: Iterable[str]) -> dict[str, Any]:
    """``{metric: protocol.scale(metric)}`` of the metrics that declare one (:meth:`Protocol.scale`)."""
    out = {m: protocol.scale(m) for m in metrics}
    return {m: s for m, s in out.items() if s is not None}


def chance_rows(protocol: Any, metrics: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """``{metric: [{"name", "kind", "value"}, ..]}``: :meth:`Protocol.chances` as plain data."""
    out: dict[str, list[dict[str, Any]]] = {}
    for metric in metrics:
        rows = [{"name": c.name, "kind": c.kind, "value": float(c.value)} for c in protocol.chances(metric)]
        if rows:
            out[metric] = rows
    return out


def control_means(run: Any) -> dict[str, dict[str, Any]]:
    """``{condition: {metric: mean}}`` of every condition the protocol scored beside Correct (a
    metric it cannot score there: None)."""
    out: dict[str, dict[str, Any]] = {}
    for condition in run.conditions:
        if condition == "correct":
            continue
        out[condition] = {}
        for metric in run.metrics:
            try:
                s = run.scores(metric, condition)
            except (FileNotFoundError, ValueError, KeyError):
                out[condition][metric] = None
                continue
            out[condition][metric] = s.mean() if s.n else None
    return out


def answers_report(cls: type, request: ScoreRequest, *, record_mode: str = "none") -> ScoreReport:
    """The default :meth:`Protocol.score`: load ``request.file`` (format detected unless given),
    ``cls.from_answers`` with the flags as options, then the run's :meth:`Protocol.score_report`."""
    if not request.file:
        raise InputError(f"score {cls.name}: no FILE given; pass {cls.answer_file}")
    answers = load_protocol_answers(str(request.file), request.format, cls.name)
    run = cls.from_answers(answers, ProtocolSettings(seed=request.seed, options=dict(request.options),
                                                     config_dir=".", record_mode=record_mode))
    return run.score_report(answers)


def evaluated_report(run: Any, answers: Any) -> ScoreReport:
    """The default :meth:`Protocol.score_report`: :meth:`Protocol.evaluate` on Correct, each control
    condition beside it, the interval and chance levels of every metric, and the protocol's own
    keys and rows (:meth:`Protocol.score_extra`, :meth:`Protocol.score_rows`)."""
    result = dict(run.evaluate())
    failures = [{"item_id": f["item_id"], "error": f["reason"]} for f in result.pop("failures", [])]
    n = int(result.pop("n", 0))
    result.pop("n_failed", None)
    metrics = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in result.items()}
    headline = headline_scores(run) if "correct" in run.conditions else {}
    return ScoreReport(n, metrics, conditions=control_means(run), failures=failures, headline=headline,
                       chances=chance_rows(run, headline), per_item=list(run.score_rows()),
                       scales=declared_scales(run, headline),
                       extra={"format": answers.format, "model": run.model, **excluded_entry(run), **run.score_extra()})
