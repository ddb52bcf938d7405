"""The previous release a run is compared with: ``[baseline] results`` (its results directory) or
``[baseline] name`` with ``[[baseline.answers]]`` (its answer files, scored in this run).

Both pair the model's answer sources with the baseline's the way ``musiceval compare`` does
(:func:`musiceval.results.comparison.pair_sources`): by protocol and label, else with the baseline source of the
same protocol whose scored items are identical (the same ``items_sha256``), and the regression gate
itself is :meth:`musiceval.gates.Gate.regression`, the engine of ``musiceval compare``. So the
regression gates of a pytest run and ``musiceval compare BASELINE RUN`` agree row for row.
"""
from __future__ import annotations

from typing import Any, Callable

from musiceval.data.errors import InputError
from musiceval.results.comparison import Baseline
from musiceval.records import ItemScores
from musiceval.suite.config import AnswerSource, SuiteConfig


class AnswerBaseline:
    """The previous release's answer files, scored by this run's protocols (same scorer side)."""

    #: its answers can be read again (:meth:`run_for`), by a judge comparing two answers side by side
    has_answers = True

    def __init__(self, suite: SuiteConfig, runs: Callable[[AnswerSource], Any]):
        self.label = self.path = suite.baseline["model"].name
        self._sources = suite.baseline_sources()
        self._runs = runs
        self.notes: list[str] = []

    def check(self, fingerprint, label: str = "") -> list[str]:
        return []  # scored in this run: the scorer side is this run's by construction

    def source_for(self, protocol: str, source: str, items_sha256: str | None = None) -> tuple[str | None, str | None]:
        """The baseline source ``source`` pairs with (same label, else identical items; None when the
        baseline has no such source) and a note when it was paired by its items.

        Pairing by items scores the baseline's other sources of the protocol; one that cannot be
        scored pairs with nothing here (its own regression test reports it, :meth:`scores`)."""
        same_protocol = [s for s in self._sources if s.protocol == protocol]
        if any(s.label == source for s in same_protocol):
            return source, None
        same = [s for s in same_protocol if items_sha256 and self._items_sha256(s) == items_sha256]
        if len(same) == 1:
            return same[0].label, (f"paired with the baseline's source {same[0].label!r}: the same items "
                                   f"(sha256 {items_sha256[:12]})")
        return None, None

    def _items_sha256(self, source: AnswerSource) -> str | None:
        try:
            return self._runs(source).items_sha256
        except (ValueError, OSError, InputError):
            return None

    def run_for(self, protocol: str, source: str, items_sha256: str | None = None) -> Any | None:
        """The baseline's protocol built from the source ``source`` pairs with (None when there is none):
        its answers, for a comparison that reads them (an LLM judge asked which answer is better)."""
        label = self.source_for(protocol, source, items_sha256)[0]
        found = next((s for s in self._sources if s.protocol == protocol and s.label == label), None)
        if found is None:
            return None
        try:
            return self._runs(found)
        except (ValueError, OSError, InputError) as exc:
            raise BaselineSourceError(f"the baseline {self.label}'s {protocol}/{found.label} ({found.path.name}) "
                                      f"cannot be scored: {exc}") from None

    def scores(self, protocol: str, source: str, metric: str, condition: str = "correct", *,
               items_sha256: str | None = None) -> ItemScores | None:
        run = self.run_for(protocol, source, items_sha256)
        if run is None:
            return None
        return run.scores(metric, condition) if metric in run.metrics and condition in run.conditions else None


class BaselineSourceError(ValueError):
    """One source of the baseline's answer files cannot be scored; the message names it and why."""


def load_baseline(suite: SuiteConfig, runs: Callable[[AnswerSource], Any]) -> Baseline | AnswerBaseline | None:
    """The suite's baseline (None when the config declares none)."""
    if suite.baseline.get("model") is not None:
        return AnswerBaseline(suite, runs)
    path = suite.baseline.get("results")
    return Baseline(path) if path else None
