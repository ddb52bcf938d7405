"""The ``musiceval`` commands above the protocols. ``musiceval score <protocol>``: one scorer for
every registered protocol, a builtin's or a plugin's (:mod:`~musiceval.commands.protocol_scorer`):
the flags are those the protocol class declares (:attr:`~musiceval.protocols.base.Protocol.score_flags`),
the numbers what its :meth:`~musiceval.protocols.base.Protocol.score` reports, so the CLI prints the
numbers the gates test; :mod:`~musiceval.commands.compare`, :mod:`~musiceval.commands.power` and
:mod:`~musiceval.commands.cache` work on results directories and caches. For ``score``,
``--format`` is optional: without it the answer format is detected from the file's content
(:func:`musiceval.data.formats.detect_format`); the short names (``musiceval``, ``dasheng``,
``muchomusic``, ``cmi-bench``) map per protocol to the registered formats, whose names are accepted too.

The common flags ``FILE``, ``--format``, ``--json``, ``--seed``, ``--per-item``, ``--debug`` are
every scorer's. The CLI prints one JSON shape for every protocol (docs/cli.md, "One JSON shape"):
``{"protocol": .., **extra, "n": .., "n_failed": .., "metrics": {metric: value},
"conditions": {condition: {metric: value}}, ..}``, where ``metrics`` are the model's own answers
(the Correct condition) and ``conditions`` each control condition scored beside them, and writes
``per_item`` rows as JSON lines to ``--per-item``; ``extra["excluded"]``
(:func:`musiceval.protocols.scoring.excluded_entry`) counts the items a named rule left out, so
scored + failed + left out accounts for every record. Input problems that make the whole file
unusable raise :class:`InputError` (exit code 2, one line naming file, line and field); one bad item
is a row in ``failures`` instead.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, Callable

from musiceval.data.errors import InputError  # noqa: F401  (raised by every scorer; defined with the loaders)


@dataclass
class ScoreOutput:
    protocol: str
    n: int
    metrics: dict[str, Any]
    #: one dict per item: at least ``item_id``; failed items carry ``error`` (the reason)
    per_item: list[dict[str, Any]] = field(default_factory=list)
    #: items that could not be scored: ``{"item_id": .., "error": ..}``
    failures: list[dict[str, Any]] = field(default_factory=list)
    #: extra top-level keys for the JSON object (e.g. ``task`` for mir)
    extra: dict[str, Any] = field(default_factory=dict)
    #: each control condition scored beside Correct: ``{condition: {metric: value}}``
    conditions: dict[str, Any] = field(default_factory=dict)
    #: per-item scores of each headline metric on Correct (the CLI prints them with their interval)
    headline: dict[str, Any] = field(default_factory=dict)
    #: paired contrasts ``{metric: (ItemScores a, ItemScores b)}``, e.g. Correct vs Random
    paired: dict[str, Any] = field(default_factory=dict)
    #: ``{metric: [{"name", "kind", "value"}]}``: chance levels and trivial baselines
    chances: dict[str, Any] = field(default_factory=dict)
    #: filled by :meth:`summarize`: ``{metric: {estimate, low, high, n, n_failed, method}}``
    intervals: dict[str, Any] = field(default_factory=dict)
    #: filled by :meth:`summarize`: ``{metric: {estimate, low, high, n, method}}``
    paired_difference: dict[str, Any] = field(default_factory=dict)
    #: what was read, named when nothing could be scored (default: FILE)
    source: str = ""
    #: ``{metric: Scale}``: each metric's declared scale, so :meth:`summarize` prints the gate's interval
    scales: dict[str, Any] = field(default_factory=dict)

    @property
    def n_failed(self) -> int:
        return len(self.failures)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"protocol": self.protocol, **self.extra, "n": self.n, "n_failed": self.n_failed}
        out["metrics"] = self.metrics
        if self.conditions:
            out["conditions"] = self.conditions
        if self.intervals:  # added keys; the keys above keep their meaning
            out["intervals"] = {m: [iv["low"], iv["high"]] for m, iv in self.intervals.items()}
            out["n_scored"] = {m: iv["n"] for m, iv in self.intervals.items()}
        if self.chances:
            out["chances"] = self.chances
        if self.paired_difference:
            out["paired_difference"] = {m: {k: d[k] for k in ("estimate", "low", "high", "n")}
                                        for m, d in self.paired_difference.items()}
        return out

    def summarize(self, seed: int = 0, on_metric=None) -> None:
        """Fill :attr:`intervals` and :attr:`paired_difference` (see :mod:`musiceval.commands.summary`)."""
        from musiceval.commands.summary import summarize

        self.intervals, self.paired_difference = summarize(self.protocol, self.headline, self.paired, seed=seed,
                                                           on_metric=on_metric, scales=self.scales)


@dataclass(frozen=True)
class Scorer:
    """``musiceval score NAME``: built for every registered protocol by
    :func:`musiceval.commands.protocol_scorer.protocol_scorer`."""

    name: str
    configure: Callable[[argparse.ArgumentParser], None]
    score: Callable[[argparse.Namespace], ScoreOutput]
    help: str = ""
    #: False for a protocol that reads no answer file (triplets probe a text encoder): no --format
    reads_answers: bool = True


def format_choices(protocol: str) -> tuple[str, ...]:
    """``--format`` names of a protocol: the short names and the registered answer formats."""
    from musiceval.data.formats import format_names
    from musiceval.data.formats_builtin import SHORT_NAMES

    return tuple(dict.fromkeys([*SHORT_NAMES.get(protocol, {}), *format_names(protocol)]))
