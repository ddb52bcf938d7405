"""Merging per-worker result parts into one run, and writing the run for people and machines.

Files written into a results directory:

- ``results.json``: run metadata (seed, model, versions, strict), the ``verdict``, every gate
  (name, outcome, estimate, CI, p-value, Holm-adjusted p-value, n, threshold, test, seed), tables
  and bar series;
- ``scores.jsonl``: the per-item scores every gate consumed (one line per metric x condition);
- ``samples.jsonl`` (when the run logged answers): one scored answer per line;
- ``report.md`` and ``report.html`` (one self-contained file, plots embedded) plus ``plots/*.png``.

Result files are read as untrusted input (see :mod:`musiceval.report.load`): a bad row is skipped
and counted, an unusable file raises :class:`ReportInputError` naming the file and field.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

from musiceval.report.load import ReportInputError, clean_gate, clean_run, parse_json, read_json_file, read_samples
from musiceval.report.view import verdict
from musiceval.stats import adjust, holm

__all__ = ["ReportInputError", "merge", "read_parts", "rebuild", "verdict", "write_reports", "write_run"]

_DECIDED = ("PASS", "FAIL", "INCONCLUSIVE")
_ROW_TYPES = ("gate", "scores", "table", "bars", "error", "sample", "source")


def _finite(value: Any) -> Any:
    """``value`` with non-finite floats replaced by None (iterative: rows are already depth-checked)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def _check_row(row: Any, where: str) -> str | None:
    """Why a parts row cannot be merged, or None."""
    if not isinstance(row, dict):
        return f"{where}: not an object"
    if row.get("type") not in _ROW_TYPES:
        return f"{where}: field 'type' is {str(row.get('type'))[:40]!r}, not one of {', '.join(_ROW_TYPES)}"
    if row["type"] == "gate":
        return clean_gate(row, where)[1]
    if row["type"] == "scores" and not (isinstance(row.get("ids"), list) and isinstance(row.get("values"), list)):
        return f"{where}: scores row without list fields 'ids' and 'values'"
    return None


def read_parts(results_dir: Path, session: str | None = None) -> list[dict[str, Any]]:
    """Rows of ``parts/<session>-*.jsonl`` (every part when ``session`` is None); a torn or
    malformed line is an ``error`` row naming file, line and field."""
    rows: list[dict[str, Any]] = []
    for part in sorted((results_dir / "parts").glob(f"{session}-*.jsonl" if session else "*.jsonl")):
        for lineno, line in enumerate(part.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{part.name}:{lineno}"
            try:
                row = parse_json(line, where)
            except ReportInputError as exc:
                rows.append({"type": "error", "detail": f"{exc}: unreadable result row; skipped"})
                continue
            why = _check_row(row, where)
            if why:
                rows.append({"type": "error", "detail": f"{why}; row skipped"})
            else:
                rows.append(_finite(row))
    return rows


def merge(rows: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    """Combine rows into one run, apply Holm across the decided gates that carry a p-value, and
    set the run's ``verdict`` (see :func:`musiceval.report.view.verdict`) unless a row set it."""
    gates = sorted((r for r in rows if r.get("type") == "gate"), key=lambda g: (str(g.get("protocol") or ""), str(g["name"])))
    tested = [g for g in gates if g["outcome"] in _DECIDED and isinstance(g.get("p_value"), (int, float))]
    alpha = float(tested[0].get("alpha") or 0.05) if tested else 0.05
    for g, p_adj in zip(tested, holm([g["p_value"] for g in tested])):
        g["p_value_holm"] = float(p_adj)
    holm_failures = [g["name"] for g in tested if g["outcome"] == "PASS" and g["p_value_holm"] > alpha]
    # family-wise control across the regression gates (against the baseline release) of the run
    regression = [g for g in tested if "/regression/" in str(g.get("check", ""))]
    method = str(meta.get("adjust", "holm"))
    for g, p_adj in zip(regression, adjust([g["p_value"] for g in regression], method)):
        g["p_value_regression_adjusted"] = float(p_adj)
    holm_failures += [g["name"] for g in regression if g["outcome"] == "PASS"
                      and g["p_value_regression_adjusted"] > alpha and g["name"] not in holm_failures]
    return {
        "meta": meta,
        "verdict": verdict(gates),
        "regression_adjustment": ({"method": "Holm" if method == "holm" else "Benjamini-Hochberg",
                                   "gates": len(regression)} if regression else None),
        "sources": list({str(r.get("id")): r for r in rows if r.get("type") == "source"}.values()),
        "counts": dict(Counter(g["outcome"] for g in gates)),
        "gates": gates,
        "holm_failures": holm_failures,
        "tables": [r for r in rows if r.get("type") == "table"],
        "bars": [r for r in rows if r.get("type") == "bars"],
        "errors": [r for r in rows if r.get("type") == "error"],
    }


def write_run(results_dir: Path, meta: dict[str, Any], *, session: str | None = None) -> dict[str, Any]:
    rows = read_parts(results_dir, session)
    run = merge(rows, meta)
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "results.json").write_text(json.dumps(run, indent=2, allow_nan=False, default=str), encoding="utf-8")
    with open(results_dir / "scores.jsonl", "w", encoding="utf-8") as fh:
        for r in rows:
            if r["type"] == "scores":
                fh.write(json.dumps(r, allow_nan=False) + "\n")
    samples = [r for r in rows if r["type"] == "sample"]
    if samples:  # answers logged through parts; a samples.jsonl written directly is left alone
        with open(results_dir / "samples.jsonl", "w", encoding="utf-8") as fh:
            for r in samples:
                fh.write(json.dumps({k: v for k, v in r.items() if k != "type"}, allow_nan=False, default=str) + "\n")
    write_reports(results_dir, run)
    return run


def write_reports(results_dir: Path, run: dict[str, Any]) -> dict[str, Any]:
    """Write ``report.md``, ``report.html`` and ``plots/``; returns the cleaned run (with ``verdict``
    and ``problems``: the rows that were skipped, each naming its field)."""
    from musiceval.report.render import context, render_html, render_md

    results_dir = Path(results_dir)
    clean = clean_run(run, "results.json")
    clean["verdict"] = clean["verdict"] or verdict(clean["gates"])
    samples, sample_problems = read_samples(results_dir / "samples.jsonl", "samples.jsonl")
    problems = clean["problems"] + sample_problems
    ctx = context(results_dir, clean, samples, problems)
    (results_dir / "report.md").write_text(render_md(results_dir, ctx), encoding="utf-8")
    (results_dir / "report.html").write_text(render_html(results_dir, ctx), encoding="utf-8")
    clean["problems"] = problems
    clean["counts"] = dict(Counter(g["outcome"] for g in clean["gates"]))
    return clean


def rebuild(results_dir: Path) -> dict[str, Any]:
    """``musiceval report DIR``: the report of ``results.json``, or of ``parts/`` when the run did not finish."""
    results_dir = Path(results_dir)
    results = results_dir / "results.json"
    if results.is_file():
        return write_reports(results_dir, read_json_file(results, f"{results}"))
    if (results_dir / "parts").is_dir() and read_parts(results_dir):
        run = write_run(results_dir, {"note": "rebuilt from parts by `musiceval report`; the run did not finish"})
        return {**run, "problems": []}  # bad part rows are in run["errors"], shown in the report
    raise ReportInputError(f"{results_dir}: no results.json and no parts/*.jsonl; pass the directory a pytest run printed")
