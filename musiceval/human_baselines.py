"""Published human accuracy on a benchmark: the reference line a model is shown against.

A :class:`HumanBaseline` is one figure a benchmark's authors published for one task or subset:
the accuracy people reached, how many took part when the source says, and the source itself (paper,
table and row). The catalogue declares them (``Benchmark.human_baselines``,
docs/benchmarks.md, "Human baselines"), ``musiceval run`` writes them into the answers entry it
declares (``human_baselines = { music = { accuracy = 0.7822, source = "..." } }``), and the choice
protocol's gates record each as a FINDING beside the model's accuracy and its interval: a reference
line, never a gate, so it never changes the verdict (docs/report.md, "Human baselines").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

#: what an answers entry's ``human_baselines`` looks like, for error messages
EXAMPLE = 'human_baselines = { music = { accuracy = 0.7822, source = "paper, table, row" } }'


@dataclass(frozen=True)
class HumanBaseline:
    """People's accuracy (0-1) on one task or subset, as ``source`` publishes it; ``n`` is the
    number of people (or answers) behind it when the source gives one."""

    accuracy: float
    source: str
    n: int | None = None

    def as_table(self) -> dict[str, Any]:
        """The TOML table of an answers entry (``n`` only when known)."""
        return {"accuracy": self.accuracy, "source": self.source, **({"n": self.n} if self.n is not None else {})}


def read_human_baselines(value: Any, where: str) -> dict[str, HumanBaseline]:
    """An answers entry's ``human_baselines`` table as ``{task or subset: HumanBaseline}``;
    ``ValueError`` naming ``where``, the bad field and the expected shape."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected a table of task or subset -> figure, e.g. {EXAMPLE}")
    out = {}
    for subset, figure in value.items():
        at = f"{where}.{subset}"
        if not isinstance(figure, Mapping) or set(figure) - {"accuracy", "source", "n"}:
            raise ValueError(f"{at}: expected a table with accuracy, source and optionally n, e.g. {EXAMPLE}")
        accuracy, source, n = figure.get("accuracy"), figure.get("source"), figure.get("n")
        if isinstance(accuracy, bool) or not isinstance(accuracy, (int, float)) or not 0.0 <= accuracy <= 1.0:
            raise ValueError(f"{at}.accuracy: expected a share between 0 and 1 (78.22 % is 0.7822), got {accuracy!r}")
        if not isinstance(source, str) or not source.strip():
            raise ValueError(f"{at}.source: name where the figure is published (paper, table and row), got {source!r}")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ValueError(f"{at}.n: expected the number of people behind the figure (at least 1), got {n!r}")
        out[str(subset)] = HumanBaseline(float(accuracy), source, n)
    return out


def position(human: float, low: float, high: float) -> str:
    """Where the human figure lies against the model's interval ``[low, high]``: ``"above"``,
    ``"inside"`` or ``"below"``."""
    return "above" if human > high else "below" if human < low else "inside"
