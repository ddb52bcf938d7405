"""Results as data: load a run directory into pandas DataFrames for notebooks and dashboards, and
compare runs.

>>> run = load(".musiceval/results/20261121-101500")      # doctest: +SKIP
>>> run.gates[["name", "outcome", "estimate"]]             # doctest: +SKIP
>>> run.scores.groupby(["metric", "condition"]).value.mean()  # doctest: +SKIP
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from musiceval.results.files import ResultsError, Run, load, read_results_json

if TYPE_CHECKING:  # pandas loads with the first comparison or load: the report reads results files without it
    import pandas as pd

__all__ = ["ResultsError", "Run", "compare", "load", "read_results_json"]


def compare(*runs: "str | Path | Run", **options: Any) -> pd.DataFrame:
    """Compare two or more runs (results dirs or :class:`Run` objects), the baseline first.

    One row per (baseline, new) pair, protocol, metric and condition: both means, the paired
    difference (positive = new better; lower-is-better metrics are turned) with its interval,
    the minimum detectable effect, the non-inferiority / superiority outcomes and a one-word
    ``verdict``; ``df.attrs["notes"]`` lists unmatched keys, missing provenance and the p-value
    adjustment. Raises :class:`musiceval.results.comparison.NotComparable` when the runs' scorer-side
    provenance differs. Options: see :func:`musiceval.results.comparison.compare_runs` (``margins``,
    ``default_margin``, ``lower_is_better``, ``alpha``, ``power``, ``adjust``, ``conditions``).

    >>> df = compare("results/v1", "results/v2", margins={"mir/accuracy": 0.02})  # doctest: +SKIP
    """
    from musiceval.results.comparison import compare_runs

    table, notes = compare_runs(*runs, **options)
    table.attrs["notes"] = notes
    return table
