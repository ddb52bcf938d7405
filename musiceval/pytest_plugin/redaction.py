"""Credentials never reach a test report: the last line of defence behind the redacting reprs.

A failing test's report holds what pytest shows of it: the traceback's source lines, the value of
every argument of every frame (``model_spec = 'openai-compatible:http://user:KEY@host/v1#m'`` in a
fixture's frame, whatever class holds it), ``--showlocals`` values, the exception's message and
the captured output. :func:`redact_report` masks credentials (:func:`musiceval.redact.redact`) in
every string of it, in place, before the terminal, the JUnit file, xdist's controller or the
verdict see it.
"""
from __future__ import annotations

from typing import Any

from musiceval.redact import redact

#: how deep the walk goes into pytest's report objects (they nest a few levels)
_MAX_DEPTH = 12


def redact_report(report: Any) -> None:
    """Mask credentials in ``report.longrepr`` and ``report.sections`` (in place)."""
    longrepr = getattr(report, "longrepr", None)
    if longrepr is not None:
        report.longrepr = _redacted(longrepr, 0)
    sections = getattr(report, "sections", None)
    if sections:
        report.sections = [(title, redact(text)) for title, text in sections]


def _redacted(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return redact(value)
    if depth > _MAX_DEPTH or isinstance(value, (int, float, bool, type(None))):
        return value
    if isinstance(value, list):
        value[:] = [_redacted(v, depth + 1) for v in value]
        return value
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_redacted(v, depth + 1) for v in value)
    if type(value).__module__.startswith("_pytest."):  # ReprEntry, ReprFuncArgs, ReprLocals, ReprFileLocation ...
        for name, attr in list(getattr(value, "__dict__", {}).items()):
            try:
                setattr(value, name, _redacted(attr, depth + 1))
            except (AttributeError, TypeError):  # a frozen field: leave it
                pass
    return value
