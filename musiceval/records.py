"""The records that move through musiceval, from dataset items to gate outcomes.

Data flows forward only::

    Item -> (condition) -> Response -> parser/extractor -> metric -> ItemScores -> GateResult

All records are plain frozen dataclasses so they pickle across pytest-xdist workers and
serialise to JSON without custom encoders (see :func:`to_jsonable`).
"""
from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np


@dataclass(frozen=True)
class Item:
    """One evaluation question about one clip.

    ``group`` is the unit of clustering for statistics (usually the track id: several
    questions about one track are not independent). ``audio`` is a path or ``None`` for
    recorded responses whose audio is not shipped.
    """

    id: str
    question: str
    audio: str | None = None
    reference: str | None = None
    labels: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    answer: str | None = None
    group: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Response:
    """A Music LM's free-text answer to one item under one condition."""

    item_id: str
    condition: str
    model: str
    prompt: str
    text: str
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ItemFailure:
    """An item that could not be scored, with the reason. Counted, never dropped silently."""

    item_id: str
    reason: str

    def under(self, condition: str) -> bool:
        """Whether this is a failed request under ``condition``: generation writes its failures'
        reasons as ``"<condition>: ..."`` or ``"<condition> chunk <k>: ..."``
        (:func:`musiceval.generate.generate_responses`).

        >>> ItemFailure("q1", "noise chunk 0: timeout").under("noise"), ItemFailure("q1", "random: x").under("noise")
        (True, False)
        """
        return self.reason.startswith((f"{condition}:", f"{condition} chunk "))


@dataclass(frozen=True)
class ItemScores:
    """Per-item values of one metric under one condition: the unit every gate consumes.

    ``ids`` pairs items across conditions: paired statistics align two ``ItemScores`` by id.
    ``groups`` (optional, same length) gives the cluster of each item.
    ``failures`` lists items the metric could not score; they are reported, not dropped.
    """

    metric: str
    ids: tuple[str, ...]
    values: np.ndarray
    groups: tuple[str, ...] | None = None
    condition: str = "correct"
    failures: tuple[ItemFailure, ...] = ()

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=float)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "ids", tuple(map(str, self.ids)))
        if values.ndim != 1 or len(values) != len(self.ids):
            raise ValueError(
                f"ItemScores {self.metric!r}: values must be 1-d with one value per id "
                f"(got shape {values.shape} for {len(self.ids)} ids)"
            )
        if len(set(self.ids)) != len(self.ids):
            raise ValueError(f"ItemScores {self.metric!r}: item ids must be unique")
        if self.groups is not None:
            groups = tuple(map(str, self.groups))
            object.__setattr__(self, "groups", groups)
            if len(groups) != len(self.ids):
                raise ValueError(f"ItemScores {self.metric!r}: one group per id is required")
        if not np.all(np.isfinite(values)):
            raise ValueError(
                f"ItemScores {self.metric!r}: non-finite values; record unscorable items "
                "as failures instead"
            )

    @property
    def n(self) -> int:
        return len(self.ids)

    def mean(self) -> float:
        """Exact (``math.fsum``) mean: the same for any order of the items."""
        return math.fsum(self.values.tolist()) / self.n if self.n else math.nan

    @classmethod
    def from_mapping(
        cls,
        metric: str,
        values: Mapping[str, float],
        *,
        condition: str = "correct",
        groups: Mapping[str, str] | None = None,
        failures: Sequence[ItemFailure] = (),
    ) -> "ItemScores":
        ids = tuple(values)
        return cls(
            metric=metric,
            ids=ids,
            values=np.array([values[i] for i in ids], dtype=float),
            groups=tuple(groups[i] for i in ids) if groups is not None else None,
            condition=condition,
            failures=tuple(failures),
        )


class Outcome(str, enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    SKIPPED = "SKIPPED"
    FINDING = "FINDING"


@dataclass(frozen=True)
class GateResult:
    """The outcome of one release gate, with everything needed to audit it."""

    name: str
    outcome: Outcome
    estimate: float
    ci: tuple[float, float]
    p_value: float | None
    n: int
    threshold: float
    test: str
    protocol: str = ""
    metric: str = ""
    alpha: float = 0.05
    p_value_holm: float | None = None
    n_failed: int = 0
    detail: str = ""
    nodeid: str = ""
    seed: int | None = None
    #: regression gates: the minimum detectable effect (metric units) at the run's alpha and power
    mde: float | None = None
    #: regression gates: what the new run was compared with (the baseline's label or results dir)
    baseline: str = ""
    #: the value the interval is compared with, on the interval's scale (the decision rule's bar)
    bar: float | None = None
    #: INCONCLUSIVE gates: about how many items (same design) would make the interval clear the bar
    n_to_decide: int | None = None
    #: regression gates: the comparison's one word (superior, non-inferior, inferior, inconclusive)
    verdict: str = ""
    #: the check id (``<protocol>/<check>/<model>/<source>/<metric>[/<what>]``) of a bound check
    check: str = ""
    #: what the metric's per-item values are, as the metric declares it (``binary (0/1 outcomes)``,
    #: ``continuous in [0, 1]``, ``continuous in [0, inf)``...: :mod:`musiceval.stats.scales`), which
    #: chose the interval; a scale read from the values says so
    scale: str = ""


def to_jsonable(obj: Any) -> Any:
    """Convert records, numpy values and enums to JSON-compatible Python values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "biu" or (obj.dtype.kind == "f" and np.isfinite(obj).all()):
            return obj.tolist()  # already plain ints, bools and finite floats
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    return obj


@dataclass(frozen=True)
class Accounting:
    """Where every line of one answer file went: scored (or an unparseable answer, which counts
    against the parse rate), or unreadable (torn JSON, wrong types: the input is corrupt), and how
    much of its benchmark the file covers."""

    #: records read (responses of every condition plus unreadable lines)
    records: int
    unreadable: tuple[ItemFailure, ...]
    #: distinct items with a Correct answer
    answered: int
    #: the benchmark the file belongs to and its number of items (None: unknown)
    benchmark: str | None
    expected: int | None
    #: the scoring cap in force (score the first N records; None: every record)
    cap: int | None

    def as_row(self) -> dict[str, Any]:
        return {"records": self.records, "unreadable": len(self.unreadable),
                "unreadable_lines": [f"{f.item_id}: {f.reason}" for f in self.unreadable[:20]],
                "answered": self.answered, "benchmark": self.benchmark, "expected": self.expected, "cap": self.cap}
