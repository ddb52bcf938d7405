"""Progress of a session, per answer source: which source is being scored, how many items are done,
and about how long is left, so that ``pytest evals/`` is not minutes of dots.

The controller (the only process that prints) follows the tests as their reports arrive, grouped by
the answer source they gate (the ``source`` parameter; under xdist the ``@source:<id>`` group suffix
of the node ids the workers collected). A source is finished when every one of its tests reported.

- one line per finished source, on a terminal or not, so a CI log gets as many lines as there are
  sources: ``musiceval: [3/12] ours-v2/mir/GTZAN: 290 items, 5 tests in 12 s; 4,120 items done,
  about 2 min left``;
- on a terminal, also a line when a source starts being scored (which worker took it).

Time left is the answer bytes still to score at the rate bytes were scored so far (the work of a
source grows with its answer file): "about", and only once a source has finished.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from musiceval.suite.config import AnswerSource, SuiteConfig

#: the user property a source's tests carry: how many items of the source were answered
ITEMS_PROPERTY = "musiceval_items"
_GROUP = "@source:"


def _source_of_nodeid(nodeid: str) -> str | None:
    at = nodeid.rfind(_GROUP)
    return nodeid[at + len(_GROUP):] if at > nodeid.rfind("]") else None


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


class SourceProgress:
    """Registered on the controller of a session that declares a model (see the module docstring)."""

    def __init__(self, suite: SuiteConfig, terminal: bool, write_line: Callable[[str], Any] = print):
        self.terminal, self.write_line = terminal, write_line
        self.bytes = {}
        for source in suite.sources():
            try:
                self.bytes[source.id] = Path(source.path).stat().st_size
            except OSError:
                self.bytes[source.id] = 0
        self.tests: dict[str, set[str]] = {}  # source id -> node ids not yet reported
        self.total: dict[str, int] = {}
        self.started: dict[str, float] = {}
        self.items: dict[str, int] = {}
        self.done: list[str] = []
        self.items_done = 0
        self.t0: float | None = None

    # -- which tests belong to which source
    def _add(self, nodeid: str, source_id: str | None) -> None:
        if source_id and source_id in self.bytes:
            self.tests.setdefault(source_id, set()).add(nodeid)
            self.total[source_id] = len(self.tests[source_id])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.tests:  # every worker collects the same tests
            for nodeid in ids:
                self._add(nodeid, _source_of_nodeid(nodeid))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            source = getattr(getattr(item, "callspec", None), "params", {}).get("source")
            if isinstance(source, AnswerSource):
                self._add(item.nodeid, source.id)

    def _source(self, nodeid: str) -> str | None:
        return next((s for s, ids in self.tests.items() if nodeid in ids), None)

    # -- as the reports arrive
    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        source = self._source(nodeid)
        if source is None or source in self.started:
            return
        self.started[source] = time.monotonic()
        self.t0 = self.t0 or self.started[source]
        if self.terminal:
            self.write_line(f"musiceval: scoring {source} ({self.bytes[source] / 1e6:.1f} MB of answers)")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for key, value in report.user_properties:
            if key == ITEMS_PROPERTY and isinstance(value, int):
                source = self._source(report.nodeid)
                if source is not None:
                    self.items[source] = value
        if report.when != "teardown":
            return
        source = self._source(report.nodeid)
        if source is None:
            return
        self.tests[source].discard(report.nodeid)
        if not self.tests[source]:
            self._finished(source)

    def _finished(self, source: str) -> None:
        now = time.monotonic()
        self.done.append(source)
        self.items_done += self.items.get(source, 0)
        items = f"{self.items[source]:,} items, " if source in self.items else ""
        line = (f"musiceval: [{len(self.done)}/{len(self.total)}] {source}: {items}{self.total[source]} tests in "
                f"{_duration(now - self.started.get(source, now))}; {self.items_done:,} items done")
        left = sum(self.bytes[s] for s in self.total if s not in self.done)
        scored = sum(self.bytes[s] for s in self.done)
        if left and scored and self.t0 is not None and now > self.t0:
            line += f", about {_duration(left / (scored / (now - self.t0)))} left"
        self.write_line(line)


def register(config: pytest.Config, suite: SuiteConfig) -> None:
    """Follow the session's sources on the controller (see :class:`SourceProgress`); the lines go
    through pytest's terminal reporter (registered after this plugin configures, hence looked up
    when a line is written)."""
    if not suite.models or config.option.collectonly or config.get_verbosity() < -1:
        return

    def write_line(line: str) -> None:
        tr = config.pluginmanager.get_plugin("terminalreporter")
        if tr is None:
            return
        if getattr(tr._tw, "width_of_current_line", 0):  # after xdist's dots, which pytest's ensure_newline misses
            tr.write("\n")
        tr.write_line(line)

    isatty = getattr(sys.stdout, "isatty", None)
    config.pluginmanager.register(SourceProgress(suite, terminal=bool(isatty and isatty()), write_line=write_line),
                                  "musiceval-progress")
