"""``report.html`` (jinja2, autoescaped, one self-contained file) and ``report.md`` of a cleaned run.

The input is the output of :func:`musiceval.report.load.clean_run` (every field type-checked);
every string is passed through :func:`~musiceval.report.view.scrub_paths` on its way out, and
every file name derived from data goes through :func:`~musiceval.report.view.safe_name` and
:func:`~musiceval.report.view.confined`.
"""
from __future__ import annotations

import base64
import functools
import json
from collections import defaultdict
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from musiceval import __version__
from musiceval.report import plots
from musiceval.report.load import clean_bars, clean_table, text
from musiceval.report.numbers import Shown, estimate, number
from musiceval.report.reasons import group
from musiceval.report.sample_data import protocol_samples
from musiceval.report.view import (banner, confined, headline, is_finding, rule, safe_name, scale, scrub_paths, shorten,
                                   verdict)
from musiceval.writes import replace_whole

#: sample rows embedded in report.html per protocol (the rest stay in samples.jsonl.xz; see sample_data)
MAX_SAMPLES_PER_PROTOCOL = 500
#: rows of one data table shown
MAX_TABLE_ROWS = 200
_DECIDED = ("FAIL", "INCONCLUSIVE", "PASS")
#: what the first screen lists, in this order: the gates that stop a release (SKIPPED: required ones only)
_FIRST_SCREEN = ("FAIL", "INCONCLUSIVE", "SKIPPED")


def _num(x: float | None) -> str:
    return "-" if x is None else number(x)


def _shown(g: dict[str, Any], bar: float | None) -> Shown:
    """The estimate, its interval and the bar with the digits the interval supports (:mod:`musiceval.report.numbers`)."""
    ci = g.get("ci")
    if g.get("estimate") is not None:
        return estimate(g["estimate"], *(ci or (None, None)), bar)
    if ci:
        return estimate((ci[0] + ci[1]) / 2, *ci, bar)._replace(estimate="")
    return Shown("", "", "", _num(bar) if bar is not None else "")


def gate_view(g: dict[str, Any]) -> dict[str, Any]:
    sc = scale(g)
    short, cut = shorten(g.get("detail") or "", 160)
    shown = _shown(g, sc["bar"])
    return {
        **g,
        "what": sc["what"],
        "est": shown.estimate or "-",
        "interval": "-" if not g.get("ci") else "exact" if g["ci"][0] == g["ci"][1] else f"[{shown.low}, {shown.high}]",
        "bar": "-" if sc["bar"] is None else f"{sc['op']} {shown.bar}",
        "chance": number(sc["chance"]) if sc["chance"] is not None else "",
        "mde": number(g["mde"]) if g.get("mde") is not None else "",
        "rule": rule(g, sc, shown.bar),
        "p": _num(g.get("p_value")), "p_holm": _num(g.get("p_value_holm")),
        "detail_short": short, "detail_cut": cut,
        "outcome_label": g["outcome"] + (" (finding)" if is_finding(g) and g["outcome"] != "FINDING" else ""),
    }


def _by_protocol(items: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for it in items:
        out[it.get("protocol") or "other"].append(it)
    return dict(sorted(out.items()))


class _PlotWriter:
    """Writes SVGs under ``plots/`` with sanitised, unique, confined names; keeps them for embedding."""

    def __init__(self, results_dir: Path):
        self.dir = results_dir / "plots"
        self.dir.mkdir(parents=True, exist_ok=True)
        for old in self.dir.glob("*.png"):  # a report rebuilt by an older version: its plots are replaced
            old.unlink()
        self.used: set[str] = set()

    def add(self, stem: str, title: str, data: bytes) -> dict[str, str]:
        base = safe_name(stem, 100)
        name, k = f"{base}.svg", 1
        while name in self.used:
            k += 1
            name = f"{base}-{k}.svg"
        self.used.add(name)
        replace_whole(confined(self.dir, name), lambda fh: fh.write(data))  # no torn plot on a full disk
        return {"file": f"plots/{name}", "title": title, "b64": Markup(base64.b64encode(data).decode("ascii"))}  # base64 alphabet: safe, and no path to scrub


def _forests(writer: _PlotWriter, protocol: str, gates: list[dict[str, Any]], kind: str) -> list[dict[str, str]]:
    images = []
    for family, members in plots.families(gates).items():
        what = scale(members[0])["what"] if len({scale(m)["what"] for m in members}) == 1 else family
        for k, svg in enumerate(plots.forest(f"{protocol} {kind}: {family}", what, members), 1):
            images.append(writer.add(f"{protocol}-{kind}-{family}-{k}", f"{protocol} {kind}: {family}", svg))
    return images


def _table_view(table: dict[str, Any]) -> dict[str, Any]:
    rows = table["rows"]
    cols = list(dict.fromkeys(text(k, 80) for r in rows[:MAX_TABLE_ROWS] for k in r))[:30]
    cells = []
    for r in rows[:MAX_TABLE_ROWS]:
        keyed = {text(k, 80): v for k, v in r.items()}
        cells.append([number(v) if isinstance(v, float) else text(keyed.get(c), 300) for c, v in ((c, keyed.get(c)) for c in cols)])
    return {"name": table["name"], "cols": cols, "rows": cells, "more": max(0, len(rows) - MAX_TABLE_ROWS)}


def context(results_dir: Path, run: dict[str, Any], samples: list[dict[str, Any]], problems: list[str]) -> dict[str, Any]:
    """Everything the templates show, computed once."""
    writer = _PlotWriter(results_dir)
    detail = run.get("verdict_detail") or {}
    declared = detail.get("models") or [m.get("name") for m in (run.get("meta") or {}).get("models") or []
                                        if isinstance(m, dict)]
    gates = [gate_view(_self_check_apart(g, declared)) for g in run["gates"]]
    run_verdict = run.get("verdict") or verdict(run["gates"])
    tables, bars = [], []
    for k, t in enumerate(run.get("tables", [])):
        row, why = clean_table(t, f"results.json: tables[{k}]")
        tables.append(row) if row else problems.append(f"{why}; skipped")
    for k, b in enumerate(run.get("bars", [])):
        row, why = clean_bars(b, f"results.json: bars[{k}]")
        bars.append(row) if row else problems.append(f"{why}; skipped")
    gates_by, tables_by, bars_by = _by_protocol(gates), _by_protocol(tables), _by_protocol(bars)
    sample_by = protocol_samples(samples, MAX_SAMPLES_PER_PROTOCOL, results_dir, _num)
    protocols = []
    # the scorer's own gates (an LLM judge) first: the model's scores rest on them
    for protocol in sorted(set(gates_by) | set(tables_by) | set(bars_by), key=lambda p: (not p.startswith("scorer: "), p)):
        pg = gates_by.get(protocol, [])
        decided = [g for g in pg if g["outcome"] in _DECIDED and not is_finding(g)]
        decided.sort(key=lambda g: (_DECIDED.index(g["outcome"]), g["name"]))
        images = _forests(writer, protocol, decided, "gates")
        images += [writer.add(f"{protocol}-bars-{k}", s["name"], plots.bars(s)) for k, s in enumerate(bars_by.get(protocol, []), 1)]
        findings = [g for g in pg if is_finding(g)]
        protocols.append({
            "name": protocol, "anchor": "p-" + safe_name(protocol), "gates": decided, "images": images,
            "tables": [_table_view(t) for t in tables_by.get(protocol, [])],
            "findings": findings,
            "finding_images": _forests(writer, protocol, [g for g in findings if g.get("estimate") is not None], "findings"),
            "skipped": [g for g in pg if g["outcome"] == "SKIPPED" and not is_finding(g)],
            "samples": sample_by.pop(protocol, None),
            "counts": {o: sum(g["outcome"] == o for g in pg) for o in ("PASS", "FAIL", "INCONCLUSIVE", "FINDING", "SKIPPED")},
        })
    for protocol, view in sample_by.items():  # samples of a protocol without gates
        protocols.append({"name": protocol, "anchor": "p-" + safe_name(protocol), "gates": [], "images": [], "tables": [],
                          "findings": [], "finding_images": [], "skipped": [], "samples": view, "counts": {}})
    meta = run.get("meta") or {}
    versions = meta.get("versions") if isinstance(meta.get("versions"), dict) else {}
    provenance = meta.get("provenance")
    if not isinstance(provenance, dict):
        provenance = {} if provenance in (None, "", []) else {"provenance": provenance}
    errors = [text(e.get("detail") if isinstance(e, dict) else e, 1000) for e in run.get("errors", [])]
    model_gates = [g for g in gates if not g["self_check"]]
    reasons = detail.get("reasons") or []
    return {
        "verdict": run_verdict, "banner": headline(detail.get("line") or "", reasons) or banner(run_verdict, run["gates"]),
        "reasons": group(reasons),
        "verdict_class": {"PASSED": "pass", "FAILED": "fail", "ERROR": "fail"}.get(run_verdict, "none"),
        "meta": [("model" if len(declared) == 1 else "models", text(", ".join(map(str, declared)), 300))] * bool(declared)
                + [(k, text(meta.get(k), 300)) for k in ("seed", "strict", "started", "finished") if k in meta],
        "sources": [_source_view(r) for r in run.get("sources") or [] if isinstance(r, dict)],
        "versions": ", ".join(f"{text(k, 40)} {text(v, 40)}" for k, v in versions.items()),
        "provenance": [(text(k, 80), text(v if not isinstance(v, (dict, list)) else json.dumps(v, default=str), 500))
                       for k, v in list(provenance.items())[:40]],
        "counts": {o: sum(g["outcome"] == o for g in model_gates) for o in ("FAIL", "INCONCLUSIVE", "PASS", "FINDING", "SKIPPED")},
        "n_self_checks": len(gates) - len(model_gates),
        "attention": _first_screen(model_gates, meta.get("required")), "protocols": protocols,
        "n_findings": sum(len(p["findings"]) for p in protocols),
        "n_skipped": sum(len(p["skipped"]) for p in protocols),
        "holm_failures": run.get("holm_failures", []),
        "errors": errors, "problems": problems, "cap": MAX_SAMPLES_PER_PROTOCOL, "generator": __version__,
    }


def _first_screen(model_gates: list[dict[str, Any]], required: Any) -> list[dict[str, Any]]:
    """The declared model's gates that stop a release: FAILed, INCONCLUSIVE, and SKIPPED where the
    ``[release] required`` profile (``meta.required``; every gate when empty) requires them, as
    :func:`musiceval.verdict.decide` counts them."""
    from musiceval.verdict import is_required

    patterns = [p for p in required if isinstance(p, str)] if isinstance(required, list) else []
    out = [g for g in model_gates if g["outcome"] in _FIRST_SCREEN and not is_finding(g)
           and (g["outcome"] != "SKIPPED" or is_required(g, patterns))]
    return sorted(out, key=lambda g: (_FIRST_SCREEN.index(g["outcome"]), g.get("protocol") or "", g["name"]))


def _self_check_apart(g: dict[str, Any], declared: list[str]) -> dict[str, Any]:
    """A gate of the suite's self-checks goes to its own section, never among the model's gates."""
    from musiceval.verdict import SELF_CHECK, subject_of

    # without declared models (a run not written by the plugin) only rows marked as self-checks are
    own = subject_of(g, declared) == SELF_CHECK if declared else g.get("subject") == SELF_CHECK
    label = "scorer" if g.get("scorer_check") else "self-checks"  # an LLM judge's own gates: the scorer's
    return {**g, "self_check": own, "protocol": f"{label}: {g.get('protocol') or 'suite'}" if own else g.get("protocol")}


def _source_view(row: dict[str, Any]) -> dict[str, Any]:
    """One answer file: where every line went, the share of its benchmark it covers, what a rule left out."""
    expected, answered = row.get("expected"), row.get("answered")
    covers = (f"covers {answered:,} of {expected:,} items of {text(row.get('benchmark'), 200)}"
              if isinstance(expected, int) and isinstance(answered, int) else
              f"{answered} items answered (benchmark size unknown)" if isinstance(answered, int) else "")
    excluded = row.get("excluded") if isinstance(row.get("excluded"), dict) else {}
    return {
        "id": text(row.get("id"), 300), "file": text(row.get("file"), 300), "covers": covers,
        "records": row.get("records"), "unreadable": row.get("unreadable") or 0,
        "unreadable_lines": [text(x, 500) for x in (row.get("unreadable_lines") or [])[:20]]
        if isinstance(row.get("unreadable_lines"), list) else [],
        "cap": f"scored the first {row['cap']} records only (a cap set in the config)" if isinstance(row.get("cap"), int) else "",
        "excluded": [f"{text(rule, 100)}: {v.get('n')} items ({text(v.get('why'), 300)})" for rule, v in excluded.items()
                     if isinstance(v, dict)],
    }


#: the results folder whose paths the template output being rendered scrubs (see ``_render``)
_SCRUB_ROOT: ContextVar[Path | None] = ContextVar("musiceval_report_root", default=None)


@functools.cache
def _environment() -> Environment:
    """One environment per process, so each template is compiled once (compiling the two report
    templates took longer than rendering them)."""
    def finalize(value: Any) -> Any:
        # Markup is template output (a macro) whose own values were finalized already
        return scrub_paths(value, _SCRUB_ROOT.get()) if isinstance(value, str) and not isinstance(value, Markup) else value

    env = Environment(loader=PackageLoader("musiceval.report", "templates"),
                      autoescape=select_autoescape(["html", "j2", "md"], default=True),
                      finalize=finalize, trim_blocks=True, lstrip_blocks=True)
    env.filters["md"] = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
    return env


def _render(template: str, results_dir: Path, ctx: dict[str, Any]) -> str:
    token = _SCRUB_ROOT.set(results_dir)
    try:
        return _environment().get_template(template).render(**ctx)
    finally:
        _SCRUB_ROOT.reset(token)


def render_html(results_dir: Path, ctx: dict[str, Any]) -> str:
    return _render("report.html.j2", results_dir, ctx)


def render_md(results_dir: Path, ctx: dict[str, Any]) -> str:
    # escaped too (Markdown viewers render inline HTML); without "<" no tag can start, so the
    # entities of ">" and quotes are turned back into the characters for people reading the file
    text = _render("report.md.j2", results_dir, ctx)
    return text.replace("&gt;", ">").replace("&#34;", '"').replace("&#39;", "'")
