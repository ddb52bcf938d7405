"""Merging per-worker result parts into one run, and writing the run for people and machines.

Files written into a results directory:

- ``results.json``: run metadata (seed, model, versions, strict), the ``verdict``, every gate
  (name, outcome, estimate, CI, p-value, Holm-adjusted p-value, n, threshold, test, seed), tables
  and bar series;
- ``scores.jsonl.xz``: the per-item scores every gate consumed (one line per metric x condition), and
  the Correct scores of every metric each declared answer source scored (rows without a gate name);
- ``samples.jsonl.xz`` (when the run logged answers): one scored answer per line (the declared
  model's, at most ``MAX_SAMPLES_PER_SOURCE`` per answer source);

The per-item files are xz-compressed JSON lines (``xz -dc``, ``pandas.read_json(..., lines=True)``
and :func:`musiceval.results.load` read them), so a run's folder is small enough for CI to keep; the
per-worker ``parts/`` are removed once merged.
- ``report.md`` and ``report.html`` (one self-contained file, plots embedded) plus ``plots/*.png``.

Result files are read as untrusted input (see :mod:`musiceval.report.load`): a bad row is skipped
and counted, an unusable file raises :class:`ResultsError` naming the file and field.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

from musiceval.report.load import clean_gate, clean_run, clean_sample, read_samples
from musiceval.report.view import verdict
from musiceval.results.files import SAMPLES, SCORES, ResultsError, parse_json, per_item_file, read_json_file
from musiceval.stats import adjust, holm

__all__ = ["ArtefactError", "ResultsError", "check_artefacts", "merge", "read_parts", "rebuild", "render_reports",
           "verdict", "write_artefacts", "write_atomically", "write_error_results", "write_reports", "write_run"]

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
            except ResultsError as exc:
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
    set a provisional ``verdict`` from the gates alone (:func:`musiceval.report.view.verdict`; the
    pytest plugin replaces it with the session's verdict, :mod:`musiceval.verdict`)."""
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


class ArtefactError(OSError):
    """An artefact of the results directory could not be written (full disk, read-only file system):
    one line naming the file and the cause."""


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, allow_nan=False, default=str) + "\n" for r in rows).encode("utf-8")


def _xz(data: bytes) -> bytes:
    """xz (LZMA preset 2): the per-item rows repeat their item ids row after row, which LZMA's large
    window finds (a CMI-Bench folder's 61 MB of scores: 1.4 MB, against 7.3 MB for gzip, in the
    same time); no timestamp, so the same rows give the same bytes (and sha256) on every run."""
    import lzma

    return lzma.compress(data, preset=2)


def _digest(data: bytes) -> dict[str, Any]:
    import hashlib

    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def write_atomically(files: dict[Path, bytes]) -> None:
    """Write every file to a temporary sibling, then rename them all into place: a full disk or a
    read-only file system leaves the old files (or none), never a torn one. Raises
    :class:`ArtefactError` naming the file; the temporary files are removed."""
    import os

    staged: list[tuple[Path, Path]] = []
    try:
        for path, data in files.items():
            tmp = path.with_name(f".{path.name}.tmp")
            staged.append((tmp, path))
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        for tmp, path in staged:
            os.replace(tmp, path)
    except OSError as exc:
        for tmp, _ in staged:
            try:
                tmp.unlink()
            except OSError:
                pass
        where = exc.filename or (staged[-1][1] if staged else "the results directory")
        raise ArtefactError(f"cannot write {where}: {exc.strerror or exc}; free space or pass "
                            "--musiceval-results-dir DIR on a writable disk") from None


def write_artefacts(results_dir: Path, run: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """``scores.jsonl.xz``, ``samples.jsonl.xz`` (when answers were logged), ``report.md``,
    ``report.html`` and ``results.json`` (with the sha256 of the others, so a reader can tell a torn
    or altered directory), written atomically together (:func:`write_atomically`)."""
    results_dir = Path(results_dir)
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ArtefactError(f"cannot write {results_dir}: {exc.strerror or exc}") from None
    from concurrent.futures import ThreadPoolExecutor

    # xz runs in threads (lzma releases the GIL) while the reports are rendered: a CMI-Bench folder's
    # 50,000 per-sample rows took 3.5 s of compression on the one thread that then rendered the
    # reports; the bytes are the same (the reports do not show the artefacts' digests)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="musiceval-xz") as pool:
        compressed = {results_dir / SCORES: pool.submit(_xz, _jsonl([r for r in rows if r["type"] == "scores"]))}
        samples = [{k: v for k, v in r.items() if k != "type"} for r in rows if r["type"] == "sample"]
        if samples:
            compressed[results_dir / SAMPLES] = pool.submit(_xz, _jsonl(samples))
        if samples:
            shown = [row for row, _ in (clean_sample(s, SAMPLES) for s in samples) if row is not None]
        else:  # a samples file written directly (not through parts) is left alone and shown
            path = per_item_file(results_dir, SAMPLES)
            shown, _ = read_samples(path, path.name)
        reports, _ = render_reports(results_dir, run, shown)
        data = {path: future.result() for path, future in compressed.items()}
    run["artefacts"] = {path.name: _digest(blob) for path, blob in data.items()}
    data.update({results_dir / name: text.encode("utf-8") for name, text in reports.items()})
    data[results_dir / "results.json"] = json.dumps(run, indent=2, allow_nan=False, default=str).encode("utf-8")
    write_atomically(data)


def write_error_results(results_dir: Path, run: dict[str, Any]) -> bool:
    """After a failed :func:`write_artefacts`: a ``results.json`` that says ERROR and why, and no
    report that could say otherwise (stale reports are removed). False when even that fails."""
    results_dir = Path(results_dir)
    for name in ("report.md", "report.html", SCORES, SAMPLES, "scores.jsonl", "samples.jsonl"):
        try:
            (results_dir / name).unlink()
        except OSError:
            pass
    slim = {k: v for k, v in run.items() if k not in ("tables", "bars")}
    slim["artefacts"] = {}
    try:
        write_atomically({results_dir / "results.json": json.dumps(slim, indent=2, allow_nan=False, default=str).encode("utf-8")})
    except ArtefactError:
        try:
            (results_dir / "results.json").unlink()
        except OSError:
            pass
        return False
    return True


def write_run(results_dir: Path, meta: dict[str, Any], *, session: str | None = None) -> dict[str, Any]:
    """Merge the parts of ``results_dir`` (of ``session``) and write every artefact (a verdict from
    the gates alone; the pytest plugin writes the session's own)."""
    rows = read_parts(results_dir, session)
    run = merge(rows, meta)
    write_artefacts(Path(results_dir), run, rows)
    return run


def render_reports(results_dir: Path, run: dict[str, Any], samples: list[dict[str, Any]] | None = None,
                   problems: list[str] | None = None) -> tuple[dict[str, str], list[str]]:
    """``({"report.md": text, "report.html": text}, problems)`` of a run (plots are written under
    ``plots/``); ``problems`` are the rows that were skipped, each naming its field."""
    from musiceval.report.render import context, render_html, render_md

    clean = clean_run(run, "results.json")
    clean["verdict"] = clean["verdict"] or verdict(clean["gates"])
    problems = clean["problems"] + list(problems or [])
    ctx = context(Path(results_dir), clean, samples or [], problems)
    return {"report.md": render_md(Path(results_dir), ctx), "report.html": render_html(Path(results_dir), ctx)}, problems


def check_artefacts(results_dir: Path, run: dict[str, Any]) -> list[str]:
    """What is wrong with the files beside ``results.json``: each must match the sha256 that
    ``results.json`` recorded for it (a torn or altered ``scores.jsonl.xz`` does not)."""
    problems = []
    for name, want in (run.get("artefacts") or {}).items():
        if not isinstance(want, dict) or name not in (SCORES, SAMPLES, "scores.jsonl", "samples.jsonl"):
            continue
        path = Path(results_dir) / name
        try:
            got = _digest(path.read_bytes())
        except OSError as exc:
            problems.append(f"{path}: recorded in results.json but cannot be read ({exc.strerror or exc})")
            continue
        if got["sha256"] != want.get("sha256"):
            problems.append(f"{path}: {got['bytes']} bytes do not match what results.json recorded "
                            f"({want.get('bytes')} bytes, sha256 {str(want.get('sha256'))[:12]}): the file was torn or "
                            "changed after the run; rerun the session")
    return problems


def write_reports(results_dir: Path, run: dict[str, Any]) -> dict[str, Any]:
    """Rewrite ``report.md``, ``report.html`` and ``plots/`` of a finished run (``musiceval report``);
    returns the cleaned run (with ``verdict``, and ``problems``: skipped rows and artefacts that do
    not match results.json, each naming its file). A stored verdict that its gates and session
    record do not give raises :class:`ResultsError` before anything is written
    (:mod:`musiceval.results.verdict_check`)."""
    from musiceval.results.verdict_check import check_verdict

    results_dir = Path(results_dir)
    clean = clean_run(run, "results.json")
    check_verdict(run, results_dir / "results.json")  # never a page whose word its gates do not give
    samples_path = per_item_file(results_dir, SAMPLES)
    samples, sample_problems = read_samples(samples_path, samples_path.name)
    reports, problems = render_reports(results_dir, run, samples, sample_problems + check_artefacts(results_dir, clean))
    write_atomically({results_dir / name: body.encode("utf-8") for name, body in reports.items()})
    clean["verdict"] = clean["verdict"] or verdict(clean["gates"])
    clean["problems"] = problems
    clean["counts"] = dict(Counter(g["outcome"] for g in clean["gates"]))
    return clean


def rebuild(results_dir: Path) -> dict[str, Any]:
    """``musiceval report DIR``: the report of ``results.json``, or of ``parts/`` when the run did not
    finish (verdict ERROR: a session that did not finish decided nothing)."""
    results_dir = Path(results_dir)
    results = results_dir / "results.json"
    if results.is_file():
        return write_reports(results_dir, read_json_file(results, "the results.json of a musiceval run"))
    if (results_dir / "parts").is_dir() and read_parts(results_dir):
        rows = read_parts(results_dir)
        run = merge(rows, {"note": "rebuilt from parts by `musiceval report`; the run did not finish"})
        run["verdict"] = "ERROR"
        run["verdict_detail"] = {"line": "musiceval: ERROR: the session did not finish (rebuilt from its parts)",
                                 "reasons": ["the session did not finish: no verdict was written"]}
        write_artefacts(results_dir, run, rows)
        return {**run, "problems": []}  # bad part rows are in run["errors"], shown in the report
    raise ResultsError(f"{results_dir}: no results.json and no parts/*.jsonl; pass the directory a pytest run printed")
