"""The one reader of a results directory's files.

- :func:`parse_json` and :func:`read_json_file`: one JSON text (a line of ``scores.jsonl.xz``,
  ``samples.jsonl.xz`` or ``parts/*.jsonl``) or one whole file (``results.json``) with every check a
  file written by other processes needs (a regular file, at most :data:`MAX_FILE_BYTES`, UTF-8 with
  a BOM tolerated, valid JSON, at most :data:`MAX_DEPTH` levels of nesting); the report
  (:mod:`musiceval.report`) reads through them and cleans the values it shows;
- :func:`read_results_json` and :func:`load`: a run read back strictly, every field checked, into
  :class:`Run` (pandas DataFrames), which :mod:`musiceval.results` (the public face) and
  :mod:`musiceval.results.comparison` use.

Anything unusable raises :class:`ResultsError` naming the file, the line or gate, and the field.
"""
from __future__ import annotations

import dataclasses
import lzma
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from musiceval.data.jsonl import NotARegularFile, check_regular_file, iter_lines, parse_json_line
from musiceval.results.errors import ResultsError

if TYPE_CHECKING:
    import pandas as pd


#: the per-item files of a results directory, xz-compressed (per-item scores and answers compress
#: 20 to 40-fold: a run's folder stays small enough for a CI job to keep as its artefact)
SCORES, SAMPLES = "scores.jsonl.xz", "samples.jsonl.xz"


def per_item_file(results_dir: Path, name: str) -> Path:
    """``name`` (:data:`SCORES` or :data:`SAMPLES`) in ``results_dir``, or the uncompressed ``.jsonl``
    of a run written before the files were compressed."""
    compressed, plain = Path(results_dir) / name, Path(results_dir) / name.removesuffix(".xz")
    return plain if plain.exists() and not compressed.exists() else compressed


#: deepest JSON nesting accepted in a result file (results are flat records)
MAX_DEPTH = 64
#: largest results.json read (bytes)
MAX_FILE_BYTES = 512 * 1024 * 1024


def depth(obj: Any, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of a parsed JSON value, computed without recursion (stops at ``limit + 1``)."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        value, d = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, d)
            if deepest > limit:
                return deepest
            children = value.values() if isinstance(value, dict) else value
            stack.extend((c, d + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def parse_json(text: str | bytes, where: str) -> Any:
    """One JSON text of a results directory; :class:`ResultsError` naming ``where`` when it is not
    valid JSON (see :func:`musiceval.data.jsonl.parse_json_line`) or nested deeper than :data:`MAX_DEPTH`."""
    try:
        value = parse_json_line(text)
    except ValueError as exc:
        raise ResultsError(f"{where}: not valid JSON ({exc})") from None
    if depth(value) > MAX_DEPTH:
        raise ResultsError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels; result files hold flat records")
    return value


def read_json_file(path: Path, what: str = "a file of a musiceval results directory") -> Any:
    """A whole JSON file of a results directory (``results.json``), parsed by :func:`parse_json`."""
    try:
        check_regular_file(path, what=what)
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ResultsError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB; not a musiceval result file")
        raw = path.read_bytes()
    except NotARegularFile as exc:
        raise ResultsError(str(exc)) from None
    except PermissionError as exc:
        raise ResultsError(f"{path}: cannot be read ({exc.strerror})") from None
    return parse_json(raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw, str(path))


@dataclass
class Run:
    meta: dict[str, Any]
    #: one row per gate: name, outcome, estimate, ci_low, ci_high, p_value, p_value_holm, n, ...
    gates: pd.DataFrame
    #: one row per item and metric: item_id, condition, metric, value, group, gate, protocol, model, source,
    #: higher_is_better, scale (model / source: None for the suite's self-checks, which are about no model;
    #: scale: the metric's declared :attr:`musiceval.stats.scales.Scale.label`, None when not recorded)
    scores: pd.DataFrame
    #: per-item failures: item_id, reason, metric, condition, gate
    failures: pd.DataFrame
    tables: list[dict[str, Any]]
    #: one row per answer source the run scored: id, protocol, model, source, items_sha256
    sources: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def read_results_json(path: str | Path) -> dict[str, Any]:
    """``results.json`` parsed and checked: an object with ``meta`` (object) and ``gates`` (array of
    objects with string ``name`` and ``outcome``); optional ``tables`` (array) and ``counts``
    (object); a stored ``verdict`` must be the one the gates and the session's record give
    (:func:`musiceval.results.verdict_check.check_verdict`). Raises :class:`ResultsError` naming the
    file and the field, ``FileNotFoundError`` when it is missing."""
    path = Path(path)
    run = read_json_file(path, "the results.json of a musiceval run")
    if not isinstance(run, dict):
        raise ResultsError(f"{path}: expected a JSON object with 'meta' and 'gates', got {_kind(run)}")
    for key, kind, required in (("meta", dict, True), ("gates", list, True), ("tables", list, False),
                                ("counts", dict, False), ("errors", list, False), ("holm_failures", list, False)):
        if key not in run:
            if required:
                raise ResultsError(f"{path}: field '{key}' is missing; the file was not written by a musiceval run")
            continue
        if not isinstance(run[key], kind):
            raise ResultsError(f"{path}: field '{key}' must be {'an object' if kind is dict else 'an array'}, got {_kind(run[key])}")
    for k, gate in enumerate(run["gates"]):
        if not isinstance(gate, dict):
            raise ResultsError(f"{path}: gates[{k}] must be an object, got {_kind(gate)}")
        for field in ("name", "outcome"):
            if not isinstance(gate.get(field), str):
                raise ResultsError(f"{path}: gates[{k}].{field} must be a string, got {_kind(gate.get(field))}")
        for field in ("estimate", "p_value", "p_value_holm", "threshold"):
            value = gate.get(field)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ResultsError(f"{path}: gates[{k}].{field} must be a number or null, got {_kind(value)}")
    for k, table in enumerate(run.get("tables", [])):
        if not isinstance(table, dict):
            raise ResultsError(f"{path}: tables[{k}] must be an object, got {_kind(table)}")
    provenance = run["meta"].get("provenance")
    if provenance is not None:
        from musiceval.provenance import fingerprint_problem

        problem = fingerprint_problem(provenance)
        if problem is not None:
            raise ResultsError(f"{path}: {problem}; the file was edited after the run: restore the results.json the "
                               "session wrote, or rerun the session")
    from musiceval.results.verdict_check import check_verdict

    check_verdict(run, path)  # the stored word is the one the gates give, or the file is refused
    return run


def _score_rows(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    score_rows: list[dict[str, Any]] = []
    failure_rows: list[dict[str, Any]] = []
    try:
        lines = list(iter_lines(path, what="the per-item scores of a musiceval run"))
    except NotARegularFile as exc:
        raise ResultsError(str(exc)) from None
    except (OSError, EOFError, lzma.LZMAError) as exc:  # a torn or corrupt xz file
        raise ResultsError(f"{path}: not a readable xz file ({exc}); rerun the session") from None
    for number, line in lines:
        if not line.strip():
            continue
        where = f"{path}:{number}"
        rec = parse_json(line, where)
        if not isinstance(rec, dict):
            raise ResultsError(f"{where}: expected a JSON object, got {_kind(rec)}")
        for field in ("metric", "condition"):
            if not isinstance(rec.get(field), str):
                raise ResultsError(f"{where}: field '{field}' must be a string, got {_kind(rec.get(field))}")
        ids, values = rec.get("ids"), rec.get("values")
        if not isinstance(ids, list) or not isinstance(values, list) or len(ids) != len(values):
            raise ResultsError(f"{where}: fields 'ids' and 'values' must be arrays of one length "
                               f"(got {_kind(ids)} and {_kind(values)})")
        if any(v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))) for v in values):
            raise ResultsError(f"{where}: field 'values' must hold numbers")
        groups = rec.get("groups") or [None] * len(ids)
        if not isinstance(groups, list) or len(groups) != len(ids):
            raise ResultsError(f"{where}: field 'groups' must be null or an array as long as 'ids'")
        failures = rec.get("failures") or []
        if not isinstance(failures, list) or not all(isinstance(f, dict) and "item_id" in f and "reason" in f for f in failures):
            raise ResultsError(f"{where}: field 'failures' must be an array of {{item_id, reason}} objects")
        base = {"metric": rec["metric"], "condition": rec["condition"], "gate": rec.get("gate"), "protocol": rec.get("protocol"),
                "model": rec.get("model"), "source": rec.get("source"), "higher_is_better": rec.get("higher_is_better"),
                "scale": rec.get("scale")}
        score_rows += [{"item_id": i, "value": v, "group": g, **base} for i, v, g in zip(ids, values, groups)]
        failure_rows += [{"item_id": f["item_id"], "reason": f["reason"], **base} for f in failures]
    return score_rows, failure_rows


def _check_digest(path: Path, recorded: Any) -> None:
    """Refuse a file that does not match the sha256 results.json recorded for it (torn or altered)."""
    import hashlib

    if not isinstance(recorded, dict) or not recorded.get("sha256") or not path.is_file():
        return  # a missing file or one that is not a regular file is named by the reader
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ResultsError(f"{path}: recorded in results.json but cannot be read ({exc.strerror or exc}); "
                           "rerun the session") from None
    if hashlib.sha256(data).hexdigest() != recorded["sha256"]:
        raise ResultsError(f"{path}: {len(data)} bytes do not match what results.json recorded ({recorded.get('bytes')} "
                           "bytes): the file was torn or changed after the run; rerun the session")


def load(results_dir: str | Path) -> Run:
    """Read ``results.json`` and the per-item scores (``scores.jsonl.xz``) of a musiceval run.

    Raises ``FileNotFoundError`` when ``results.json`` is missing and :class:`ResultsError`
    (naming the file, line or gate, and the field) when a file is malformed.
    """
    import pandas as pd

    results_dir = Path(results_dir)
    path = results_dir / "results.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: pass the directory a `pytest evals/` run printed after 'results:'")
    run = read_results_json(path)
    gates = pd.DataFrame(run["gates"])
    if not gates.empty and "ci" in gates:
        ci = gates.pop("ci").apply(lambda c: c if isinstance(c, list) and len(c) == 2 else [None, None])
        gates["ci_low"], gates["ci_high"] = ci.str[0], ci.str[1]
    score_rows: list[dict[str, Any]] = []
    failure_rows: list[dict[str, Any]] = []
    scores_path = per_item_file(results_dir, SCORES)
    _check_digest(scores_path, (run.get("artefacts") or {}).get(scores_path.name))
    if scores_path.exists():
        score_rows, failure_rows = _score_rows(scores_path)
    scores = pd.DataFrame(score_rows, columns=["item_id", "condition", "metric", "value", "group", "gate", "protocol",
                                               "model", "source", "higher_is_better", "scale"])
    failures = pd.DataFrame(failure_rows, columns=["item_id", "reason", "metric", "condition", "gate", "protocol",
                                                   "model", "source"])
    sources = [r for r in run.get("sources", []) if isinstance(r, dict)] if isinstance(run.get("sources"), list) else []
    return Run(meta=run["meta"], gates=gates, scores=scores, failures=failures, tables=run.get("tables", []),
               sources=sources)
