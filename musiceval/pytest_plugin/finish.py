"""End of a session: merge the parts, write the artefacts, decide the one verdict and print it."""
from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

import pytest

from musiceval.pytest_plugin import junit
from musiceval.pytest_plugin.options import _STATES, _is_worker, _opt, _state, _strict
from musiceval.pytest_plugin.session import RESULTS_DIR_FIX, scorers
from musiceval.suite.config import SuiteConfig
from musiceval.verdict import MODEL, subject_of
from musiceval.writes import cannot_write, remove_quietly

# ----------------------------------------------------------------------------- merge and report


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Merge the parts, decide the one verdict, write the JUnit file (whole, in place of pytest's
    junitxml: musiceval.pytest_plugin.junit) and the artefacts (results.json last), and make the exit
    status say the same. A file that cannot be written makes the verdict ERROR and leaves none torn."""
    config = session.config
    state = getattr(config, "_musiceval", None)
    if state is None or _is_worker(config):
        return
    from musiceval.report import merge, read_parts, write_artefacts, write_error_results

    results_dir = state["results_dir"]
    rows = read_parts(results_dir, state["session"]) if (results_dir / "parts").is_dir() else []
    if not rows and not state["n_gate_tests"]:  # no musiceval test ran in this session (e.g. a project's unit tests)
        _release_unused_results_dir(state)
        suite = state["suite"]
        if suite.models and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            state["no_gates"] = (
                f"musiceval: {suite.where} declares {', '.join(m.name for m in suite.models)} but no musiceval gate was "
                f"collected: run pytest in the directory of {Path(suite.path).name if suite.path else 'musiceval.toml'} "
                "(the config collects the gates), or add them with `musiceval init` (evals/test_musiceval.py)")
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    meta = {**state["meta"], "session": state["session"],
            "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "exitstatus": int(exitstatus),
            "deselected_self_checks": state["deselected_self_checks"], "self_checks": state["self_checks"]}
    run = merge(rows, meta)
    verdict = _verdict_of(config, run, state["errors"], int(exitstatus))
    xml = junit.logxml(config)  # written first, whole: its failure is an ERROR that results.json can still say
    if xml is not None and not _write_junit(xml, verdict, state["errors"]):
        verdict = _verdict_of(config, run, state["errors"], int(exitstatus))
    try:
        write_artefacts(results_dir, run, rows)
    except Exception as exc:  # a full disk, or a report that cannot be rendered: never a verdict beside torn files
        state["errors"].append(("writing the artefacts", "failed", _artefact_failure(exc, results_dir)))
        verdict = _verdict_of(config, run, state["errors"], int(exitstatus))
        write_error_results(results_dir, run)
        _remove_plots(results_dir)  # drawn for the reports that are gone; one may be torn
        if xml is not None and xml.musiceval_failure is None and not _write_junit(xml, verdict, state["errors"]):
            verdict = _decide(config, run, state["errors"], int(exitstatus))  # the terminal names both causes
    else:
        _remove_parts(results_dir, state["session"])  # merged into the artefacts: a second copy CI would upload
    state["run"], state["verdict"] = run, verdict
    if verdict.exit_code != 0 or session.exitstatus in (0, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = verdict.exit_code if verdict.exit_code else session.exitstatus
    _release_lock(results_dir)


def _artefact_failure(exc: Exception, results_dir: Path) -> str:
    """The one line of an artefact that could not be written: :class:`ArtefactError`'s own; an
    ``OSError`` of the report's plots (written as they are drawn) names the file, else ``plots/``."""
    from musiceval.report import ArtefactError

    if isinstance(exc, ArtefactError):
        return str(exc)
    if isinstance(exc, OSError):
        return cannot_write(exc.filename or results_dir / "plots", exc, RESULTS_DIR_FIX)
    return f"the report could not be written ({type(exc).__name__}: {exc}); results.json says ERROR"


def _verdict_of(config: pytest.Config, run: dict[str, Any], errors: list, exitstatus: int):
    """The verdict, decided again from ``errors`` and recorded in ``run``."""
    verdict = _decide(config, run, errors, exitstatus)
    run["verdict"], run["verdict_detail"] = verdict.word, verdict.as_dict()
    return verdict


def _write_junit(xml: Any, verdict: Any, errors: list) -> bool:
    """The JUnit file, whole, with the verdict among its properties; False (and the one line among
    ``errors``: the verdict is ERROR) when it cannot be written, and then no JUnit file is left."""
    junit.set_properties(xml, {"musiceval_verdict": verdict.word, "musiceval_verdict_line": verdict.line})
    failure = junit.write(xml)
    if failure is not None:
        errors.append(("writing the JUnit file", "failed", failure))
    return failure is None


def _remove_plots(results_dir: Path) -> None:
    plots = results_dir / "plots"
    for plot in plots.glob("*.svg"):
        remove_quietly(plot)
    try:
        plots.rmdir()
    except OSError:  # not there, or holds files not ours
        pass


def _remove_parts(results_dir: Path, session: str) -> None:
    """This session's ``parts/`` files, once merged (another session's parts are left alone)."""
    parts = results_dir / "parts"
    for part in parts.glob(f"{session}-*.jsonl"):
        try:
            part.unlink()
        except OSError:
            pass
    try:
        parts.rmdir()
    except OSError:  # another session's parts remain, or none were written
        pass


def _release_lock(results_dir: Path) -> None:
    try:
        (results_dir / ".session.lock").unlink()
    except OSError:
        pass


def _release_unused_results_dir(state: dict[str, Any]) -> None:
    """A session that recorded nothing (``pytest tests/``, a collection error) leaves no trace: its
    lock goes, and so do the folders it made, where they are empty."""
    try:
        (state["results_dir"] / ".session.lock").unlink()
    except OSError:
        pass
    for folder in state.get("made", []):  # deepest first
        try:
            folder.rmdir()
        except OSError:  # not empty (another session's results) or already gone
            break


def _decide(config: pytest.Config, run: dict[str, Any], errors: list[str], exitstatus: int):
    from musiceval.verdict import decide, group_errors

    suite: SuiteConfig = _state(config)["suite"]
    inconclusive = _opt(config, "musiceval_inconclusive") or suite.thresholds["defaults"]["inconclusive"]
    return decide(run["gates"], declared=[m.name for m in suite.models], required=suite.required,
                  errors=[*group_errors(errors), *(e["detail"] for e in run["errors"])], strict=_strict(config),
                  holm_failures=run["holm_failures"], inconclusive=inconclusive,
                  allow_empty=bool(_opt(config, "musiceval_allow_empty", False)), pytest_exit=exitstatus,
                  allow_skip=suite.allow_skip,
                  unpinned=_unpinned(suite),
                  capped=sorted(f"{r['id']}: first {r['cap']} of {r['records']} records" for r in run["sources"]
                                if isinstance(r.get("cap"), int) and isinstance(r.get("records"), int)
                                and r["records"] > r["cap"]))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = getattr(config, "_musiceval", None)
    if not state or "run" not in state:
        return
    run = state["run"]
    tr = terminalreporter
    tr.section("musiceval gates")
    declared = {m.name for m in state["suite"].models}
    sections = (("the scorer of the declared model's answers (its LLM judge; a failure makes the verdict ERROR)",
                 lambda g: bool(g.get("scorer_check"))),
                ("about the declared model", lambda g: subject_of(g, declared) == MODEL),
                ("self-checks of the suite (never gates of the model)",
                 lambda g: subject_of(g, declared) != MODEL and not g.get("scorer_check")))
    for title, belongs in sections:
        gates = [g for g in run["gates"] if belongs(g)]
        if not gates:
            continue
        tr.write_line(f"-- {title}")
        for g in gates:
            est = g.get("estimate")
            est_s = f"{est:+.4f}" if isinstance(est, (int, float)) else "   -   "
            n_failed = f" (n_failed={g['n_failed']})" if g.get("n_failed") else ""
            tr.write_line(f"{g['outcome']:<12} {est_s}  {g.get('protocol', ''):<14} {g['name']}{n_failed}")
    if state["deselected_self_checks"]:
        tr.write_line(f"{state['deselected_self_checks']} tests not about the declared model were not run "
                      "(self-checks: pass --musiceval-self-checks)")
    for reason in state["verdict"].reasons:
        tr.write_line(f"  {reason}")
    for label, name in (("results:", "results.json"), ("report: ", "report.html")):
        path = state["results_dir"] / name
        tr.write_line(f"{label} {path}" if path.is_file() else f"{label} not written ({path})")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """The verdict line, last: after pytest's own summary line."""
    state = getattr(config, "_musiceval", None)
    if state and _STATES and _STATES[-1] is state:
        _STATES.pop()
    if state and state.get("no_gates") and not _is_worker(config):
        tr = config.pluginmanager.get_plugin("terminalreporter")
        tr.write_line(state["no_gates"], red=True, bold=True) if tr is not None else print(state["no_gates"])
    if not state or "verdict" not in state or _is_worker(config):
        return
    verdict = state["verdict"]
    tr = config.pluginmanager.get_plugin("terminalreporter")
    report = state["results_dir"] / "report.html"
    line = f"{verdict.line}; report: {report}" if report.is_file() else verdict.line  # none when it could not be written
    colour = {"PASSED": "green", "FAILED": "red", "ERROR": "red"}.get(verdict.word, "yellow")
    if tr is not None:
        tr.write_line(line, **{colour: True, "bold": True})
    else:
        print(line)


def _unpinned(suite) -> list[str]:
    """``"<what>: why"`` of each source whose benchmark data, and each scorer (an LLM judge), that
    is not pinned to a revision: the verdict line names them."""
    data = {f"{s.label}: {s.options['unpinned']}" for s in suite.sources() if s.options.get("unpinned")}
    judged = {f"LLM judge {entry['scorer'].get('model')}: {entry['scorer']['unpinned']}"
              for entry in scorers(suite).values() if entry.get("scorer", {}).get("unpinned")}
    return sorted(data | judged)
