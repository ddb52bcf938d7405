"""Cleaning what a results directory holds: every value is checked before it reaches the report.

A results directory is data written by other processes (and sometimes edited by hand), so the
report treats it as untrusted input. Files are read by :mod:`musiceval.results.files` (the one
reader); this module turns what they hold into display values:

- a file that cannot be used at all (invalid JSON, not an object, nesting too deep, ``gates``
  not a list) raises :class:`~musiceval.results.files.ResultsError` naming the file and the field
  (the CLI exits 2);
- one bad row (a gate without ``name``, an unknown outcome, a sample that is not an object) is
  skipped and counted with its position and field in ``problems``; it never crashes the report;
- non-finite numbers become ``None`` (rendered ``-``), wrong types are dropped field by field,
  and huge strings are clipped for display (the file itself is never rewritten here).
"""
from __future__ import annotations

import lzma
import json
import math
from pathlib import Path
from typing import Any

from musiceval.results.files import MAX_DEPTH, ResultsError, depth, parse_json
from musiceval.verdict import VERDICTS

#: outcomes a gate row may carry
OUTCOMES = ("PASS", "FAIL", "INCONCLUSIVE", "FINDING", "SKIPPED", "N/A")
#: display clip of free text (names, details); the full text stays in results.json
MAX_TEXT = 4000
#: verdict reasons shown (the report groups those of one cause into one line; see report.reasons)
MAX_REASONS = 1000


# ----------------------------------------------------------------------------- field cleaning


def num(value: Any) -> float | None:
    """A finite float, or None (bools, strings, NaN and infinities are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        f = float(value)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def integer(value: Any) -> int | None:
    f = num(value)
    return int(f) if f is not None and f == int(f) else None


def text(value: Any, limit: int = MAX_TEXT) -> str:
    """A display string: None -> '', scalars -> str, clipped at ``limit`` characters."""
    if value is None:
        return ""
    if isinstance(value, float) and not math.isfinite(value):
        return ""
    if not isinstance(value, (str, int, float, bool)):
        import reprlib

        r = reprlib.Repr()
        r.maxlevel, r.maxstring, r.maxother = 4, limit, limit
        value = r.repr(value)
    s = str(value)
    return s if len(s) <= limit else s[:limit] + f"… ({len(s) - limit} more characters)"


def interval(value: Any) -> tuple[float, float] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        lo, hi = num(value[0]), num(value[1])
        if lo is not None and hi is not None:
            return (min(lo, hi), max(lo, hi))
    return None


_TEXT_FIELDS = ("protocol", "test", "detail", "metric", "nodeid", "model", "source", "role", "check", "unit")
_NUM_FIELDS = ("estimate", "threshold", "p_value", "p_value_holm", "alpha", "mde", "baseline")


def clean_gate(row: Any, where: str) -> tuple[dict[str, Any] | None, str | None]:
    """A gate row with checked types, or ``(None, reason)`` naming the field that is wrong."""
    if not isinstance(row, dict):
        return None, f"{where}: not an object"
    name, outcome = row.get("name"), row.get("outcome")
    if not isinstance(name, str) or not name.strip():
        return None, f"{where}: field 'name' missing or not a string"
    if outcome not in OUTCOMES:
        return None, f"{where} ({text(name, 80)}): field 'outcome' is {text(outcome, 40)!r}, not one of {', '.join(OUTCOMES)}"
    g: dict[str, Any] = {"name": text(name, 500), "outcome": outcome}
    for key in _TEXT_FIELDS:
        g[key] = text(row.get(key), 500 if key != "detail" else MAX_TEXT)
    for key in _NUM_FIELDS:
        g[key] = num(row.get(key))
    g["n"], g["n_failed"] = integer(row.get("n")), integer(row.get("n_failed"))
    g["ci"] = interval(row.get("ci"))
    hib = row.get("higher_is_better")
    g["higher_is_better"] = hib if isinstance(hib, bool) else None
    if row.get("scorer_check") is True:  # an LLM judge's own gate: shown above the model's
        g["scorer_check"] = True
    return g, None


def clean_run(raw: Any, label: str) -> dict[str, Any]:
    """A run dict (as ``merge`` returns it) with every field checked; bad rows counted in ``problems``."""
    if not isinstance(raw, dict):
        raise ResultsError(f"{label}: top level is {type(raw).__name__}, expected an object with 'gates' and 'meta'")
    gates_raw = raw.get("gates", [])
    if not isinstance(gates_raw, list):
        raise ResultsError(f"{label}: field 'gates' is {type(gates_raw).__name__}, expected a list of gate objects")
    meta = raw.get("meta", {})
    problems: list[str] = []
    if not isinstance(meta, dict):
        problems.append(f"{label}: field 'meta' is {type(meta).__name__}, expected an object; ignored")
        meta = {}
    gates = []
    for k, row in enumerate(gates_raw):
        g, why = clean_gate(row, f"{label}: gates[{k}]")
        if g is None:
            problems.append(f"{why}; row skipped")
        else:
            gates.append(g)
    run: dict[str, Any] = {"meta": meta, "gates": gates}
    for key in ("tables", "bars", "errors"):
        value = raw.get(key, [])
        if not isinstance(value, list):
            problems.append(f"{label}: field '{key}' is {type(value).__name__}, expected a list; ignored")
            value = []
        run[key] = value
    holm = raw.get("holm_failures", [])
    run["holm_failures"] = [text(h, 500) for h in holm] if isinstance(holm, list) else []
    verdict = raw.get("verdict")
    run["verdict"] = verdict if verdict in VERDICTS else None
    detail = raw.get("verdict_detail")
    run["verdict_detail"] = {
        "line": text(detail.get("line")),
        "reasons": _reasons(detail.get("reasons")),
        "models": [text(m, 200) for m in detail.get("models", [])[:20]] if isinstance(detail.get("models"), list) else [],
        "self_checks": {text(k, 40): v for k, v in detail.get("self_checks", {}).items() if isinstance(v, int)}
        if isinstance(detail.get("self_checks"), dict) else {},
    } if isinstance(detail, dict) else None
    sources = raw.get("sources", [])
    run["sources"] = [{text(k, 80): (v if isinstance(v, (int, float)) and not isinstance(v, bool) else
                                     v if isinstance(v, dict) and depth(v) <= MAX_DEPTH else text(v, 500))
                       for k, v in row.items()} for row in sources[:2000] if isinstance(row, dict)] \
        if isinstance(sources, list) else []
    run["artefacts"] = raw.get("artefacts") if isinstance(raw.get("artefacts"), dict) else {}
    run["problems"] = problems
    return run


def _reasons(value: Any) -> list[str]:
    """The verdict's reasons, each whole up to :data:`MAX_TEXT`; past :data:`MAX_REASONS` one line says how many more."""
    if not isinstance(value, list):
        return []
    more = [f"{len(value) - MAX_REASONS} more reasons in results.json"] if len(value) > MAX_REASONS else []
    return [text(r) for r in value[:MAX_REASONS]] + more


def clean_table(row: Any, where: str) -> tuple[dict[str, Any] | None, str | None]:
    if not isinstance(row, dict):
        return None, f"{where}: not an object"
    rows = row.get("rows")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        return None, f"{where}: field 'rows' is not a list of objects"
    return {"protocol": text(row.get("protocol"), 200), "name": text(row.get("name"), 500), "rows": rows[:2000]}, None


def clean_bars(row: Any, where: str) -> tuple[dict[str, Any] | None, str | None]:
    if not isinstance(row, dict):
        return None, f"{where}: not an object"
    values = row.get("values")
    if not isinstance(values, dict):
        return None, f"{where}: field 'values' is not an object of label -> number"
    return {"protocol": text(row.get("protocol"), 200), "name": text(row.get("name"), 500),
            "ylabel": text(row.get("ylabel"), 200),
            "values": {text(k, 120): num(v) for k, v in list(values.items())[:200]}}, None


_SAMPLE_TEXT = ("protocol", "model", "source", "item_id", "condition")


def clean_sample(row: Any, where: str) -> tuple[dict[str, Any] | None, str | None]:
    """One line of ``samples.jsonl.xz``: the scored answer a person can read."""
    if not isinstance(row, dict):
        return None, f"{where}: not an object"
    if not isinstance(row.get("item_id"), (str, int)) or isinstance(row.get("item_id"), bool):
        return None, f"{where}: field 'item_id' missing or not a string"
    s = {k: text(row.get(k), 300) for k in _SAMPLE_TEXT}
    for k in ("prompt", "answer", "reference"):
        s[k] = text(row.get(k))
    parsed = row.get("parsed")
    s["unmapped"] = parsed is None or parsed == "" or parsed == [] or parsed == {}
    s["parsed"] = "" if s["unmapped"] else (parsed if isinstance(parsed, str) else text(
        json.dumps(parsed, ensure_ascii=False, default=str) if depth(parsed) <= MAX_DEPTH else parsed))
    scores = row.get("scores")
    s["scores"] = {text(k, 80): num(v) for k, v in list(scores.items())[:50]} if isinstance(scores, dict) else {}
    if row.get("failure"):  # why the answer has no score (an LLM judge's unreadable reply, quoted)
        s["failure"] = text(row["failure"], 300)
    return s, None


def read_samples(path: Path, label: str, *, max_rows: int = 2_000_000) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of ``samples.jsonl.xz`` (or an older run's ``samples.jsonl``) and the problems found (bad
    lines are counted, never fatal)."""
    samples: list[dict[str, Any]] = []
    problems: list[str] = []
    if not path.is_file():
        return samples, problems
    bad = 0
    first_bad = ""
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8", errors="strict") as fh:
        lineno = 0
        while True:
            try:
                line = fh.readline()
            except UnicodeDecodeError as exc:
                problems.append(f"{label}: not UTF-8 after line {lineno} ({exc.reason}); the rest is not shown")
                break
            except (OSError, EOFError, lzma.LZMAError) as exc:  # a torn or corrupt xz file
                problems.append(f"{label}: not a readable xz file after line {lineno} ({exc}); the rest is not shown")
                break
            if not line:
                break
            lineno += 1
            if not line.strip():
                continue
            if lineno > max_rows:
                problems.append(f"{label}: more than {max_rows} lines; the rest is not shown")
                break
            try:
                row, why = clean_sample(parse_json(line, f"{label}:{lineno}"), f"{label}:{lineno}")
            except ResultsError as exc:
                row, why = None, str(exc)
            if row is None:
                bad += 1
                first_bad = first_bad or str(why)
            else:
                samples.append(row)
    if bad:
        problems.append(f"{label}: {bad} line(s) skipped; first: {first_bad}")
    return samples, problems
