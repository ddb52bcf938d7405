"""Merging per-worker result parts into one run, and writing the run for people and machines.

Files written into a results directory:

- ``results.json``: run metadata (seed, model, versions, strict), every gate (name, outcome,
  estimate, CI, p-value, Holm-adjusted p-value, n, threshold, test, seed), tables and bar series;
- ``scores.jsonl``: the per-item scores every gate consumed (one line per metric x condition);
- ``report.md`` and ``report.html`` (self-contained, plots embedded) plus ``plots/*.png``.
"""
from __future__ import annotations

import base64
import html
import io
import json
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from musiceval.stats import adjust, holm

_DECIDED = ("PASS", "FAIL", "INCONCLUSIVE")
_COLOURS = {"PASS": "#2e7d32", "FAIL": "#c62828", "INCONCLUSIVE": "#ef6c00", "FINDING": "#1565c0", "SKIPPED": "#757575"}


def read_parts(results_dir: Path, session: str | None = None) -> list[dict[str, Any]]:
    """Rows of ``parts/<session>-*.jsonl`` (every part when ``session`` is None); a torn last line
    (a killed worker) is reported, not fatal."""
    rows: list[dict[str, Any]] = []
    for part in sorted((results_dir / "parts").glob(f"{session}-*.jsonl" if session else "*.jsonl")):
        for lineno, line in enumerate(part.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                rows.append({"type": "error", "detail": f"{part.name}:{lineno}: unreadable result row"})
    return rows


def merge(rows: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    """Combine rows into one run and apply Holm across the decided gates that carry a p-value."""
    gates = sorted((r for r in rows if r["type"] == "gate"), key=lambda g: (g.get("protocol", ""), g["name"]))
    tested = [g for g in gates if g["outcome"] in _DECIDED and g.get("p_value") is not None]
    alpha = float(tested[0].get("alpha", 0.05)) if tested else 0.05
    for g, p_adj in zip(tested, holm([g["p_value"] for g in tested])):
        g["p_value_holm"] = float(p_adj)
    holm_failures = [g["name"] for g in tested if g["outcome"] == "PASS" and g["p_value_holm"] > alpha]
    regression = [g for g in tested if "/regression/" in str(g.get("check", ""))]
    method = str(meta.get("adjust", "holm"))
    for g, p_adj in zip(regression, adjust([g["p_value"] for g in regression], method)):
        g["p_value_regression_adjusted"] = float(p_adj)
    holm_failures += [g["name"] for g in regression if g["outcome"] == "PASS" and g["p_value_regression_adjusted"] > alpha
                      and g["name"] not in holm_failures]
    outcomes = Counter(g["outcome"] for g in gates)
    verdict = ("FAILED" if outcomes["FAIL"] else "PASSED" if outcomes["PASS"] and not outcomes["INCONCLUSIVE"]
               else "NOTHING DECIDED" if not outcomes["PASS"] else "INCONCLUSIVE")
    return {
        "meta": meta,
        "verdict": verdict,
        "counts": dict(Counter(g["outcome"] for g in gates)),
        "gates": gates,
        "holm_failures": holm_failures,
        "regression_adjustment": ({"method": "Holm" if method == "holm" else "Benjamini-Hochberg",
                                   "gates": len(regression)} if regression else None),
        "sources": list({r["id"]: r for r in rows if r["type"] == "source"}.values()),
        "tables": [r for r in rows if r["type"] == "table"],
        "bars": [r for r in rows if r["type"] == "bars"],
        "errors": [r for r in rows if r["type"] == "error"],
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
    write_reports(results_dir, run)
    return run


# ----------------------------------------------------------------------------- rendering


def _fmt(x: Any, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    if isinstance(x, (list, tuple)) and len(x) == 2:
        return f"[{_fmt(x[0], digits)}, {_fmt(x[1], digits)}]"
    return str(x)


def _by_protocol(items: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for it in items:
        out[it.get("protocol") or "other"].append(it)
    return dict(sorted(out.items()))


def _gate_plot(protocol: str, gates: list[dict[str, Any]]) -> bytes | None:
    """Forest plot: each gate's estimate and interval relative to its margin (0 = the bar)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # decided gates, and findings that carry an interval (e.g. "adversarial - skyline")
    shown = [g for g in gates if g["outcome"] in _DECIDED + ("FINDING",) and g.get("estimate") is not None
             and g.get("ci") and None not in g["ci"]]
    if not shown:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(shown) + 1.2))
    for k, g in enumerate(shown):
        # estimates are differences from the bar, except at_least gates whose estimate is the mean
        offset = (g.get("threshold") or 0.0) if g.get("test", "").startswith("bootstrap CI of the mean") else 0.0
        lo, hi = (g["ci"][0] if g["ci"][0] is not None else g["estimate"]), (g["ci"][1] if g["ci"][1] is not None else g["estimate"])
        ax.plot([lo - offset, hi - offset], [k, k], color=_COLOURS[g["outcome"]], lw=2)
        ax.plot(g["estimate"] - offset, k, "o", color=_COLOURS[g["outcome"]])
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(shown)), [g["name"][:70] for g in shown], fontsize=7)
    ax.set_xlabel("estimate - bar (with 95% interval); blue: findings, which never fail")
    ax.set_title(f"{protocol}: gates")
    fig.tight_layout()
    return _png(fig)


def _bars_plot(series: dict[str, Any]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(series["values"])
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(labels) + 2), 4))
    ax.bar(range(len(labels)), [series["values"][k] or 0.0 for k in labels], color="#1565c0")
    ax.set_xticks(range(len(labels)), labels, rotation=70, ha="right", fontsize=7)
    ax.set_ylabel(series.get("ylabel", ""))
    ax.set_title(series["name"])
    fig.tight_layout()
    return _png(fig)


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def _table_md(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return ["(empty)"]
    cols = list(dict.fromkeys(k for r in rows for k in r))
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return out


def _table_html(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p>(empty)</p>"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(r.get(c)))}</td>" for c in cols) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


_GATE_COLS = ("outcome", "name", "estimate", "ci", "threshold", "p_value", "p_value_holm", "n", "n_failed", "test", "detail")


def write_reports(results_dir: Path, run: dict[str, Any]) -> None:
    plots_dir = results_dir / "plots"
    plots_dir.mkdir(exist_ok=True)
    meta = run["meta"]
    md = ["# musiceval report", "",
          f"model `{meta.get('model')}` · seed {meta.get('seed')} · strict {meta.get('strict')} · "
          f"started {meta.get('started')} · versions " + ", ".join(f"{k} {v}" for k, v in meta.get("versions", {}).items()),
          "", "Outcomes: " + ", ".join(f"{v} {k}" for k, v in run["counts"].items()), ""]
    body = [f"<h1>musiceval report</h1><p>{html.escape(md[2])}</p><p>{html.escape(md[4])}</p>"]
    if run["holm_failures"]:
        md += ["**PASS gates that are not significant after Holm correction:** " + ", ".join(run["holm_failures"]), ""]
        body.append("<p><b>PASS gates not significant after Holm correction:</b> " + html.escape(", ".join(run["holm_failures"])) + "</p>")
    gates_by, tables, bars = _by_protocol(run["gates"]), _by_protocol(run["tables"]), _by_protocol(run["bars"])
    for protocol in sorted(set(gates_by) | set(tables) | set(bars)):
        gates = gates_by.get(protocol, [])
        md += [f"## {protocol}", ""]
        body.append(f"<h2>{html.escape(protocol)}</h2>")
        if gates:
            rows = [{c: g.get(c) for c in _GATE_COLS} for g in gates]
            md += _table_md(rows) + [""]
            body.append(_table_html(rows))
        images = []
        png = _gate_plot(protocol, gates)
        if png:
            images.append((f"{protocol}_gates.png", png))
        for k, series in enumerate(bars.get(protocol, [])):
            images.append((f"{protocol}_bars_{k}.png", _bars_plot(series)))
        for fname, data in images:
            (plots_dir / fname).write_bytes(data)
            md += [f"![{fname}](plots/{fname})", ""]
            body.append(f'<img alt="{fname}" src="data:image/png;base64,{base64.b64encode(data).decode()}">')
        for table in tables.get(protocol, []):
            md += [f"### {table['name']}", ""] + _table_md(table["rows"]) + [""]
            body.append(f"<h3>{html.escape(table['name'])}</h3>" + _table_html(table["rows"]))
    if run["errors"]:
        md += ["## Errors", ""] + [f"- {e['detail']}" for e in run["errors"]]
    (results_dir / "report.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    style = ("body{font-family:sans-serif;max-width:1200px;margin:auto}table{border-collapse:collapse;font-size:12px}"
             "td,th{border:1px solid #ccc;padding:3px 6px}img{max-width:100%}")
    (results_dir / "report.html").write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>musiceval report</title><style>{style}</style></head>"
        f"<body>{''.join(body)}</body></html>", encoding="utf-8")
