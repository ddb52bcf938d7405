"""What a test's outcome means: the result sink, marker skips, and the runtest hooks that turn gates
into pass, fail, skip or xfail.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from musiceval.pytest_plugin.collection import _subject_of, defining_module, is_scorer_check, plain_nodeid
from musiceval.pytest_plugin.options import (_STATES, DATASET_HINTS, FINDING_PREFIX, NOT_APPLICABLE, REPORT_PREFIX,
                                             _is_worker, _opt, _state, _worker_id)
from musiceval.pytest_plugin.redaction import redact_report
from musiceval.pytest_plugin.session import RESULTS_DIR_FIX, rootpath
from musiceval.records import Outcome
from musiceval.redact import redact, redact_meta
from musiceval.suite.config import AnswerSource
from musiceval.verdict import MODEL, SELF_CHECK
from musiceval.writes import append_whole, cannot_write

# ----------------------------------------------------------------------------- result sink


def _sink(config: pytest.Config):
    state = _state(config)
    parts = state["results_dir"] / "parts"
    path = parts / f"{state['session']}-{_worker_id(config)}.jsonl"

    def write(row: dict[str, Any]) -> None:
        if row.get("type") != "scores":  # names, details, tables and answers may quote a model spec
            row = redact_meta(row)
        line = (json.dumps(row, allow_nan=False, default=str) + "\n").encode("utf-8")
        try:
            parts.mkdir(parents=True, exist_ok=True)
            append_whole(path, line)  # a failed append is cut back: no torn row
        except OSError as exc:  # a full disk mid-run: this test errors, the verdict is ERROR
            failure = cannot_write(path, exc, RESULTS_DIR_FIX)
        else:
            return
        raise ResultsNotWritten(failure, pytrace=False)  # outside the except: one line, no chained exception

    return write


class ResultsNotWritten(pytest.fail.Exception):
    """A row of the results could not be written (a full disk): the test errors with the one line
    ``cannot write <file>: <cause>; free space or pass --musiceval-results-dir DIR ...`` (an outcome
    of the test, like ``pytest.fail``, so that no ``except Exception`` in the test swallows it)."""


def _sink_in_hook(item: pytest.Item, report: pytest.TestReport, row: dict[str, Any]) -> None:
    """Write ``row`` from a hook, where no exception may be raised: a write that fails (a full disk)
    fails the test's report instead, with the one line naming the file (the verdict is ERROR)."""
    try:
        _sink(item.config)(row)
    except ResultsNotWritten as exc:
        report.outcome = "failed"
        report.longrepr = exc.msg


# ----------------------------------------------------------------------------- markers


def _marker_skip_reason(item: pytest.Item) -> str | None:
    config = item.config
    if item.get_closest_marker("gpu") is not None:
        try:
            import torch

            has_cuda = torch.cuda.is_available()
        except ImportError:
            has_cuda = False
        if not has_cuda:
            return "needs a CUDA GPU (marker 'gpu'); run on a machine with one"
    mark = item.get_closest_marker("llm")
    if mark is not None:
        cassette = mark.kwargs.get("cassette")
        have_cassette = cassette is not None and (rootpath(config) / cassette).exists()
        recording = _opt(config, "musiceval_record_mode", "none") != "none" and os.environ.get("OPENAI_API_KEY")
        if not have_cassette and not recording:
            where = f"cassette {cassette!r} is missing" if cassette else "no cassette is configured"
            return (f"needs the suite's LLM: {where}; record it with OPENAI_API_KEY=... pytest {plain_nodeid(item)} "
                    "--musiceval-record-mode once")
    for mark in item.iter_markers("dataset"):
        name = mark.args[0] if mark.args else mark.kwargs["name"]
        data_dir = _opt(config, "musiceval_data_dir")
        sub = mark.kwargs.get("path", name)
        if not data_dir or not (Path(data_dir) / sub).exists():
            hint = DATASET_HINTS.get(name, f"put it under <data-dir>/{sub}")
            where = f"{data_dir}/{sub}" if data_dir else "--musiceval-data-dir (not given)"
            return f"{NOT_APPLICABLE}dataset {name!r} not found at {where}: {hint}; then pass --musiceval-data-dir"
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    reason = _marker_skip_reason(item)
    if reason:
        pytest.skip(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    result = yield
    gate = getattr(item, "_musiceval_gate", None)
    if gate is not None:
        gate.finish()
    return result


def is_known_error(exc: BaseException) -> bool:
    """An error musiceval raises on purpose (its own exception classes: a missing resource, an
    unusable input, a refused source): its message names the input and the fix, so a traceback
    adds nothing a user needs."""
    return any(klass.__module__.split(".")[0] == "musiceval" for klass in type(exc).__mro__[:-1])


def known_error_line(exc: BaseException) -> str:
    """``"<ErrorClass>: <message>"`` on one line, whole (never cut), credentials redacted."""
    text = " ".join(str(exc).split()) or "no message"
    return redact(f"{type(exc).__name__}: {text}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    redact_report(report)  # no frame argument, local, message or captured line holds a credential
    excinfo = call.excinfo
    if report.failed and excinfo is not None and isinstance(excinfo.value, ResultsNotWritten):
        report.longrepr = excinfo.value.msg  # the line alone (a chained repr would prefix "Failed: ")
    elif (report.failed and excinfo is not None and is_known_error(excinfo.value)
            and getattr(item.config.option, "tbstyle", "auto") == "auto"):
        # one line with its fix instead of a traceback per test (``--tb=long`` brings the traceback back)
        report.longrepr = known_error_line(excinfo.value)
    if getattr(item, "_musiceval_gate", None) is not None or isinstance(
            getattr(getattr(item, "callspec", None), "params", {}).get("source"), AnswerSource):
        report.user_properties.append(("musiceval_gate_test", _subject_of(item, _state(item.config)["suite"])[0]))
    if report.failed and report.when == "call" and getattr(item, "_musiceval_gate_failed", False):
        report.user_properties.append(("musiceval_gate_failure", "1"))  # a FAIL of a gate, not an error
    if "gate" not in getattr(item, "fixturenames", ()) or hasattr(report, "wasxfail"):
        return report
    gate = getattr(item, "_musiceval_gate", None)
    if report.when == "call" and report.passed and gate is not None and (gate.results or gate.n_recorded):
        if all(r.outcome is Outcome.FINDING for r in gate.results):  # nothing decided: not a passing test
            names = redact("; ".join(f"{r.name} = {r.estimate:+.4f}" for r in gate.results[:3]))
            text = FINDING_PREFIX + names if names else f"{REPORT_PREFIX}{gate.n_recorded} table(s) recorded"
            report.outcome = "skipped"
            report.longrepr = (str(item.fspath), item.location[1] or 0, text)
        return report
    if not report.skipped:
        return report
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    if reason.startswith((FINDING_PREFIX, REPORT_PREFIX)):
        return report
    not_applicable = reason.startswith(NOT_APPLICABLE)
    source = getattr(getattr(item, "callspec", None), "params", {}).get("source")
    check = _skip_check_id(item, source)
    subject, model = _subject_of(item, _state(item.config)["suite"])
    _sink_in_hook(item, report, {
        "type": "gate", "name": plain_nodeid(item).rpartition("::")[2],
        "outcome": "N/A" if not_applicable else Outcome.SKIPPED.value,
        "detail": reason, "nodeid": plain_nodeid(item), "test": "skipped", "protocol": _protocol_of(item),
        "check": check, "model": model, "source": getattr(source, "label", ""),
        "subject": SELF_CHECK if subject == SELF_CHECK else MODEL,
        **({"scorer_check": True} if is_scorer_check(item) else {}),
    })
    # a skipped required gate of the declared model makes the verdict INCONCLUSIVE (musiceval.verdict),
    # with or without --strict (which then exits 1 even under --musiceval-inconclusive xfail); a
    # skipped self-check never decides the word
    return report


def pytest_sessionstart(session: pytest.Session) -> None:
    if _is_worker(session.config):
        session.config.workeroutput["musiceval_deselected"] = 0  # type: ignore[attr-defined]
    else:  # the JUnit file is written whole, or not at all (musiceval.pytest_plugin.junit)
        from musiceval.pytest_plugin import junit

        junit.install(session.config)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:  # xdist (controller): a worker's deselected tests
    state = getattr(node.config, "_musiceval", None)
    if state is not None:
        state["deselected_self_checks"] = max(state["deselected_self_checks"],
                                              int(getattr(node, "workeroutput", {}).get("musiceval_deselected", 0)))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect what went wrong outside the gates (on the controller: xdist forwards the reports):
    an error in setup or teardown, a test that failed other than by a gate's FAIL (an exception, a
    timeout, a refused baseline). Each makes the verdict ERROR."""
    if not _STATES:
        return
    state = _STATES[-1]
    props = dict(report.user_properties)
    if report.when == "setup" and "musiceval_gate_test" in props:
        state["n_gate_tests"] += 1
    if not report.failed or (report.when == "call" and props.get("musiceval_gate_failure") == "1"):
        return
    text = _first_line(report.longrepr)
    what = ("timed out" if "Timeout" in text else "errored in " + report.when if report.when != "call"
            else "baseline refused" if text.startswith("baseline refused") else "raised")
    state["errors"].append((report.nodeid.split("@")[0], what, text))


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed and _STATES:
        _STATES[-1]["errors"].append((f"collecting {report.nodeid or 'the tests'}", "failed", _first_line(report.longrepr)))


#: the longest first line of an unexpected exception kept as a reason (a repr can run to megabytes)
MAX_REASON = 2000


def _first_line(longrepr: Any) -> str:
    """The first line of what went wrong, whole; an unexpected exception's line longer than
    :data:`MAX_REASON` ends at a word boundary and says how much the test's own report holds."""
    crash = getattr(longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or (longrepr[2] if isinstance(longrepr, tuple) else str(longrepr))
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    line = lines[0] if lines else "no message"
    if len(line) > MAX_REASON:
        kept = line[:MAX_REASON].rsplit(" ", 1)[0]
        line = f"{kept} [... {len(line) - len(kept)} more characters in the test's own report]"
    return redact(line)


def _skip_check_id(item: pytest.Item, source: AnswerSource | None) -> str:
    """The check id of a skipped test: ``<protocol>/<test>/<model>/<source>/<other parameters>/*``
    (``freeform/metric_correct_beats_random/m/MusicQA/clap_text/*``), for ``[release]`` patterns."""
    name = getattr(item, "originalname", item.name).removeprefix("test_")
    params = getattr(getattr(item, "callspec", None), "params", {})
    extra = [str(v) for k, v in params.items() if k != "source" and isinstance(v, (str, int)) and not isinstance(v, bool)]
    parts = [_protocol_of(item), name] + ([source.model, source.label] if source is not None else []) + extra
    return "/".join(parts) + "/*"


def _matches(check: str, pattern: str) -> bool:
    import fnmatch

    return fnmatch.fnmatchcase(check, pattern) or fnmatch.fnmatchcase(pattern, check)


def _protocol_of(item: pytest.Item) -> str:
    """The source's protocol, else the test module's ``PROTOCOL``, else its file name without ``test_``."""
    source = getattr(getattr(item, "callspec", None), "params", {}).get("source")
    if isinstance(source, AnswerSource):
        return source.protocol
    module = defining_module(getattr(item, "function", None), getattr(item, "module", None))
    protocol = getattr(module, "PROTOCOL", None)
    if isinstance(protocol, str):
        return protocol
    return Path(str(getattr(module, "__file__", None) or item.fspath)).stem.removeprefix("test_")


