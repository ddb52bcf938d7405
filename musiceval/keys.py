"""The keys of the suite config: what a section or an answers entry may hold, with type, default,
meaning and range. A protocol declares its own (:attr:`musiceval.protocols.base.Protocol.config_keys`,
``answer_options``); :mod:`musiceval.suite.schema` validates a config against them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from musiceval.ranges import AT_LEAST_ONE, NON_NEGATIVE, SHARE, Range


@dataclass(frozen=True)
class CheckRule:
    """One ``[checks."<pattern>"]`` rule of the suite config (docs/config.md): whether the checks whose
    id matches ``pattern`` are release gates (``gate``) or findings, their ``margin``, and why."""

    pattern: str
    gate: bool | None = None
    margin: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class Key:
    type: type | tuple[type, ...]
    default: Any
    help: str
    #: the numbers the key takes (:mod:`musiceval.ranges`); every number is finite
    range: Range | None = None
    #: the words a text key takes, or a function giving them (a registry's names, read when checked)
    choices: Iterable[str] | Callable[[], Iterable[str]] | None = None
    #: as a ``musiceval score`` flag (docs/extending.md, "Score flags and output"): the value's name
    #: in ``--help`` (``DIR``, ``N``), and for a bool key whether the flag takes no value (``--strict``)
    metavar: str | None = None
    switch: bool = False

    def allowed(self) -> list[str] | None:
        """The words the key takes, or None for any text."""
        if self.choices is None:
            return None
        return list(self.choices() if callable(self.choices) else self.choices)


#: the keys every protocol that reads answer files has in its section: margins in the metric's
#: own units, the parse-rate minimum, the listening and question-control margins, the regression margins
GATE_KEYS: dict[str, Key] = {
    "margin": Key((int, float), 0.0, "default margin of this protocol's gates, in the metric's own units", NON_NEGATIVE),
    "margins": Key(dict, {}, "per 'metric', 'task' or 'task.metric' margins (most specific wins)"),
    "min_parse_rate": Key((int, float), 0.0, "parse-rate gate: share of answers the parser must read", SHARE),
    "listens_margin": Key((int, float), 0.0, "'the model listens' gate: Correct must beat the best control by this much",
                          NON_NEGATIVE),
    "answers_margin": Key((int, float), 0.0, "'the model answers the question' gate: Correct must beat the same answers "
                                             "moved to other questions about the same clip by this much", NON_NEGATIVE),
    "regression_margin": Key((int, float), 0.02, "non-inferiority to the baseline: the largest drop tolerated, in the "
                                                 "metric's units", NON_NEGATIVE),
    "regression_margins": Key(dict, {}, "per 'metric', 'task' or 'task.metric' regression margins (most specific wins)"),
}


#: the keys every answers entry may set that describe the source to the suite, not options of its
#: protocol: the benchmark's size (the coverage gate's denominator), why its data has no pinned
#: revision (named in the verdict line; ``musiceval run`` writes it for an unpinned catalogue entry)
#: and the human accuracy its authors published (``musiceval.human_baselines``; a finding, never a gate)
SOURCE_KEYS: dict[str, Key] = {
    "expected_items": Key(int, 0, "the benchmark's number of items, for the coverage gate (known ones need none)",
                          AT_LEAST_ONE),
    "unpinned": Key(str, "", "why the benchmark's data is not pinned to a revision; the verdict line names it"),
    "human_baselines": Key(dict, {}, "published human accuracy per task or subset ({ accuracy, source, n }): shown "
                                     "against the model's accuracy as a finding, never a gate"),
}


def cache_dir_key(what: str) -> Key:
    """The ``--cache-dir DIR`` flag of a scorer with an on-disk cache (:mod:`musiceval.cache_dir`)."""
    from musiceval.cache_dir import ENV

    return Key(str, None, f"root of the on-disk {what} (sub-folders embeddings/, responses/); default ${ENV}, "
                          "else the platform cache directory", metavar="DIR")


def margin_for(section: Mapping[str, Any], metric: str, task: str = "", *, kind: str = "margin") -> float:
    """The margin of ``metric`` (on ``task``) in a validated protocol section: ``<kind>s`` by
    ``"task.metric"``, then ``"metric"``, then ``"task"``, else the section's ``<kind>``
    (``kind="regression_margin"`` for the non-inferiority margins)."""
    margins = section.get(f"{kind}s", {})
    for key in (f"{task}.{metric}" if task else None, metric, task or None):
        if key and key in margins:
            return float(margins[key])
    return float(section.get(kind, 0.0))
