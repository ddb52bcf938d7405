"""Results as data: load a run directory into pandas DataFrames for notebooks and dashboards.

>>> run = load(".musiceval/results/20261121-101500")      # doctest: +SKIP
>>> run.gates[["name", "outcome", "estimate"]]             # doctest: +SKIP
>>> run.scores.groupby(["metric", "condition"]).value.mean()  # doctest: +SKIP
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd


@dataclass
class Run:
    meta: dict[str, Any]
    #: one row per gate: name, outcome, estimate, ci_low, ci_high, p_value, p_value_holm, n, ...
    gates: pd.DataFrame
    #: one row per item and metric: item_id, condition, metric, value, group, gate, protocol, model, source
    #: (model / source: None for rows written before they were recorded)
    scores: pd.DataFrame
    #: per-item failures: item_id, reason, metric, condition, gate
    failures: pd.DataFrame
    tables: list[dict[str, Any]]


def load(results_dir: str | Path) -> Run:
    """Read ``results.json`` and ``scores.jsonl`` of a musiceval run."""
    results_dir = Path(results_dir)
    path = results_dir / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: pass the directory a `pytest evals/` run printed after 'results:'")
    run = json.loads(path.read_text(encoding="utf-8"))
    gates = pd.DataFrame(run["gates"])
    if not gates.empty and "ci" in gates:
        ci = gates.pop("ci").apply(lambda c: c if isinstance(c, list) and len(c) == 2 else [None, None])
        gates["ci_low"], gates["ci_high"] = ci.str[0], ci.str[1]
    score_rows, failure_rows = [], []
    scores_path = results_dir / "scores.jsonl"
    if scores_path.is_file():
        for line in scores_path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            groups = rec.get("groups") or [None] * len(rec["ids"])
            base = {"metric": rec["metric"], "condition": rec["condition"], "gate": rec.get("gate"), "protocol": rec.get("protocol"),
                    "model": rec.get("model"), "source": rec.get("source")}
            score_rows += [{"item_id": i, "value": v, "group": g, **base} for i, v, g in zip(rec["ids"], rec["values"], groups)]
            failure_rows += [{"item_id": f["item_id"], "reason": f["reason"], **base} for f in rec.get("failures", [])]
    scores = pd.DataFrame(score_rows, columns=["item_id", "condition", "metric", "value", "group", "gate", "protocol",
                                               "model", "source"])
    failures = pd.DataFrame(failure_rows, columns=["item_id", "reason", "metric", "condition", "gate", "protocol",
                                                   "model", "source"])
    return Run(meta=run["meta"], gates=gates, scores=scores, failures=failures, tables=run.get("tables", []))


def compare(*runs: "str | Path | Run", **options: Any) -> pd.DataFrame:
    """Compare two or more runs (results dirs or :class:`Run` objects), the baseline first.

    One row per (baseline, new) pair, protocol, metric and condition: both means, the paired
    difference (positive = new better; lower-is-better metrics are turned) with its interval,
    the minimum detectable effect, the non-inferiority / superiority outcomes and a one-word
    ``verdict``; ``df.attrs["notes"]`` lists unmatched keys, missing provenance and the p-value
    adjustment. Raises :class:`musiceval.compare.NotComparable` when the runs' scorer-side
    provenance differs. Options: see :func:`musiceval.compare.compare_runs` (``margins``,
    ``default_margin``, ``lower_is_better``, ``alpha``, ``power``, ``adjust``, ``conditions``).

    >>> df = compare("results/v1", "results/v2", margins={"mir/accuracy": 0.02})  # doctest: +SKIP
    """
    from musiceval.compare import compare_runs

    table, notes = compare_runs(*runs, **options)
    table.attrs["notes"] = notes
    return table
