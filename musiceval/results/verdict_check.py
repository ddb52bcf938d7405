"""The verdict of ``results.json``, decided again: a reader never trusts the stored word.

A session records the one verdict (``verdict``), its detail (``verdict_detail``: line, reasons,
counts ...) and, in ``verdict_detail.inputs``, everything besides the gates that
:func:`musiceval.verdict.decide` took (declared models, required patterns, ``allow_skip``, the
session's errors, strict mode, Holm failures, the inconclusive and allow-empty policies, pytest's
exit status, capped sources). :func:`check_verdict` decides again from the file's gates and those
inputs and refuses (:class:`~musiceval.results.files.ResultsError`, naming the file and the field) a
file whose stored word or detail differs, or whose inputs disagree with what the file records
elsewhere (``meta.required``, ``meta.strict``, ``meta.exitstatus``, ``meta.models``,
``holm_failures``, the ``errors`` rows). ``musiceval report``, ``musiceval compare``,
``musiceval power`` and :func:`musiceval.results.load` all read through it.

Files written without ``inputs``: by :func:`musiceval.report.write_run` (no session: the word is the
gates' alone, :func:`musiceval.verdict.gates_alone`), and by sessions of an earlier musiceval (the
inputs are rebuilt from what the file records; only the word is compared).

What this cannot catch: a file edited consistently throughout (gates, word, detail and inputs
together). The check guarantees that the word shown is the one the file's own gates give, not that
the gates are the ones the session measured.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Mapping

from musiceval.results.errors import ResultsError
from musiceval.verdict import VERDICTS, decide, gates_alone

#: the fields of ``verdict_detail`` compared with the recomputed verdict (``Verdict.as_dict()``)
DETAIL_FIELDS = ("word", "line", "reasons", "counts", "required", "passed", "models", "exit_code", "self_checks",
                 "capped", "allowed_skips", "unpinned")
#: inputs and detail fields that sessions of earlier versions did not record, and their value then
_SINCE_LATER = {"unpinned": []}
_FIX = "the file was edited after the run: restore the results.json the session wrote, or rerun the session"


def _error(path: Any, message: str) -> Exception:
    return ResultsError(f"{path}: {message}; {_FIX}")


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: each input of :func:`decide`: (what it must be, the check)
_INPUTS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "declared": ("a list of strings", _strings),
    "required": ("a list of strings", _strings),
    "errors": ("a list of strings", _strings),
    "strict": ("true or false", lambda v: isinstance(v, bool)),
    "holm_failures": ("a list of strings", _strings),
    "inconclusive": ("'fail' or 'xfail'", lambda v: v in ("fail", "xfail")),
    "allow_empty": ("true or false", lambda v: isinstance(v, bool)),
    "pytest_exit": ("an integer", _integer),
    "capped": ("a list of strings", _strings),
    "allow_skip": ("an object of pattern -> reason", lambda v: isinstance(v, dict)
                   and all(isinstance(k, str) and isinstance(r, str) for k, r in v.items())),
    "unpinned": ("a list of strings", _strings),
}


def _gates(run: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The gate rows a verdict is decided from (rows that are not objects decide nothing)."""
    gates = run.get("gates")
    return [g for g in gates if isinstance(g, dict)] if isinstance(gates, list) else []


def check_verdict(run: Mapping[str, Any], path: str | Path) -> str | None:
    """The stored verdict word of ``run`` (a parsed results.json) once it is shown to be the one its
    gates and session record give; None when the file stores no word (the report then shows the
    gates' own). Raises :class:`~musiceval.results.files.ResultsError` naming ``path`` and the field."""
    word, detail = run.get("verdict"), run.get("verdict_detail")
    if detail is None and word is None:
        return None
    if word not in VERDICTS:
        found = "missing" if "verdict" not in run else f"{_short(word)}, not one of {', '.join(VERDICTS)}"
        raise _error(path, f"field 'verdict' is {found}")
    if detail is None:
        return _check_gates_alone(run, word, path)
    if not isinstance(detail, dict):
        raise _error(path, f"field 'verdict_detail' must be an object, got {type(detail).__name__}")
    if "inputs" not in detail:
        return _check_earlier_session(run, word, detail, path)
    inputs = _inputs(detail["inputs"], path)
    _cross_check(run, inputs, path)
    expected = decide(_gates(run), **inputs).as_dict()
    if word != expected["word"]:
        raise _error(path, f"field 'verdict' says {word}, but its gates and the session's record give "
                           f"{expected['word']} ({_first_reason(expected)})")
    for key in DETAIL_FIELDS:
        if key not in detail and key in _SINCE_LATER and expected[key] == _SINCE_LATER[key]:
            continue
        if key not in detail:
            raise _error(path, f"field 'verdict_detail.{key}' is missing")
        if detail[key] != expected[key]:
            raise _error(path, f"field 'verdict_detail.{key}' is {_short(detail[key])}, but the file's gates and the "
                               f"session's record give {_short(expected[key])}")
    return word


def _first_reason(verdict: Mapping[str, Any]) -> str:
    reasons = verdict.get("reasons") or []
    return str(reasons[0]) if reasons else f"{verdict.get('passed')} of {verdict.get('required')} required gates passed"


def _check_gates_alone(run: Mapping[str, Any], word: str, path: Any) -> str:
    """A file without ``verdict_detail``: the word of its gates alone, unless a session wrote it
    (a session always records the detail, so one deleted is an edit)."""
    meta = run.get("meta")
    if isinstance(meta, dict) and "session" in meta:
        raise _error(path, "field 'verdict_detail' is missing (a pytest session always records it)")
    expected = gates_alone(_gates(run))
    if word != expected:
        raise _error(path, f"field 'verdict' says {word}, but its gates give {expected}")
    return word


def _inputs(raw: Any, path: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _error(path, f"field 'verdict_detail.inputs' must be an object, got {type(raw).__name__}")
    out = {}
    for key, (what, fits) in _INPUTS.items():
        if key not in raw and key in _SINCE_LATER:
            out[key] = _SINCE_LATER[key]
            continue
        if key not in raw:
            raise _error(path, f"field 'verdict_detail.inputs.{key}' is missing")
        if not fits(raw[key]):
            raise _error(path, f"field 'verdict_detail.inputs.{key}' must be {what}, got {_short(raw[key])}")
        out[key] = raw[key]
    return out


def _cross_check(run: Mapping[str, Any], inputs: Mapping[str, Any], path: Any) -> None:
    """The inputs against what the file records elsewhere, where it records it."""
    meta = run.get("meta") if isinstance(run.get("meta"), dict) else {}
    recorded = {"meta.required": ("required", meta.get("required")), "meta.strict": ("strict", meta.get("strict")),
                "meta.exitstatus": ("pytest_exit", meta.get("exitstatus")),
                "holm_failures": ("holm_failures", run.get("holm_failures"))}
    models = meta.get("models")
    if isinstance(models, list):
        recorded["meta.models"] = ("declared", [m.get("name") for m in models if isinstance(m, dict)])
    for where, (key, value) in recorded.items():
        if value is not None and value != inputs[key]:
            raise _error(path, f"field '{where}' is {_short(value)}, but 'verdict_detail.inputs.{key}' is "
                               f"{_short(inputs[key])}")
    rows = run.get("errors") if isinstance(run.get("errors"), list) else []
    for k, row in enumerate(rows):
        detail = row.get("detail") if isinstance(row, dict) else None
        if detail not in inputs["errors"]:
            raise _error(path, f"field 'errors[{k}]' ({_short(detail)}) is not among 'verdict_detail.inputs.errors'")


_ALLOWED = re.compile(r'allowed to skip \(\[release\] allow_skip "(.*)": (.*)\): \d+ gate\(s\)')


def _check_earlier_session(run: Mapping[str, Any], word: str, detail: Mapping[str, Any], path: Any) -> str:
    """A session of an earlier musiceval recorded no inputs: rebuild them from what the file records
    (an ERROR's reasons are its errors) and compare the word."""
    meta = run.get("meta") if isinstance(run.get("meta"), dict) else {}
    models = [m.get("name") for m in meta.get("models") or [] if isinstance(m, dict)] \
        if isinstance(meta.get("models"), list) else []
    declared = detail.get("models") if _strings(detail.get("models")) else [m for m in models if isinstance(m, str)]
    reasons = detail.get("reasons") if _strings(detail.get("reasons")) else []
    allowed = detail.get("allowed_skips") if _strings(detail.get("allowed_skips")) else []
    allow_skip = dict(m.groups() for m in map(_ALLOWED.fullmatch, allowed) if m)
    exitstatus = meta.get("exitstatus")
    expected = decide(_gates(run), declared=declared,
                      required=meta.get("required") if _strings(meta.get("required")) else [],
                      errors=reasons if word == "ERROR" else [], strict=meta.get("strict") is True,
                      holm_failures=run.get("holm_failures") if _strings(run.get("holm_failures")) else [],
                      pytest_exit=exitstatus if _integer(exitstatus) else 0, allow_skip=allow_skip)
    if word != expected.word:
        raise _error(path, f"field 'verdict' says {word}, but its gates and the session's record give "
                           f"{expected.word} ({_first_reason(expected.as_dict())})")
    if detail.get("word", word) != word:
        raise _error(path, f"field 'verdict_detail.word' is {_short(detail.get('word'))}, but 'verdict' is {word}")
    return word
