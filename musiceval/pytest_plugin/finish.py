"""End of a session: merge the parts, write the artefacts, decide the one verdict and print it."""
from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

import pytest

from musiceval.pytest_plugin.options import _STATES, _is_worker, _opt, _state, _strict
from musiceval.suite.config import SuiteConfig
from musiceval.verdict import MODEL, subject_of

# ----------------------------------------------------------------------------- merge and report


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Merge the parts, decide the one verdict, write the artefacts (results.json last), and make the
    exit status and the JUnit file say the same. Runs before junitxml writes its file."""
    config = session.config
    state = getattr(config, "_musiceval", None)
    if state is None or _is_worker(config):
        return
    from musiceval.report import ArtefactError, merge, read_parts, write_artefacts, write_error_results

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
    verdict = _decide(config, run, state["errors"], int(exitstatus))
    run["verdict"], run["verdict_detail"] = verdict.word, verdict.as_dict()
    try:
        write_artefacts(results_dir, run, rows)
    except Exception as exc:  # a full disk, or a report that cannot be rendered: never a verdict beside torn files
        state["errors"].append(("writing the artefacts", "failed", str(exc) if isinstance(exc, ArtefactError) else
                                f"the report could not be written ({type(exc).__name__}: {exc}); results.json says ERROR"))
        verdict = _decide(config, run, state["errors"], int(exitstatus))
        run["verdict"], run["verdict_detail"] = verdict.word, verdict.as_dict()
        write_error_results(results_dir, run)
    else:
        _remove_parts(results_dir, state["session"])  # merged into the artefacts: a second copy CI would upload
    state["run"], state["verdict"] = run, verdict
    if verdict.exit_code != 0 or session.exitstatus in (0, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = verdict.exit_code if verdict.exit_code else session.exitstatus
    xml = getattr(config, "stash", {}).get(_junit_key(), None) if _junit_key() is not None else None
    if xml is not None:
        xml.add_global_property("musiceval_verdict", verdict.word)
        xml.add_global_property("musiceval_verdict_line", verdict.line)
    _release_lock(results_dir)


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


def _junit_key() -> Any:
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - junitxml is part of pytest
        return None
    return xml_key


def _decide(config: pytest.Config, run: dict[str, Any], errors: list[str], exitstatus: int):
    from musiceval.verdict import decide, group_errors

    suite: SuiteConfig = _state(config)["suite"]
    inconclusive = _opt(config, "musiceval_inconclusive") or suite.thresholds["defaults"]["inconclusive"]
    return decide(run["gates"], declared=[m.name for m in suite.models], required=suite.required,
                  errors=[*group_errors(errors), *(e["detail"] for e in run["errors"])], strict=_strict(config),
                  holm_failures=run["holm_failures"], inconclusive=inconclusive,
                  allow_empty=bool(_opt(config, "musiceval_allow_empty", False)), pytest_exit=exitstatus,
                  capped=[f"{r['id']}: first {r['cap']} of {r['records']} records" for r in run["sources"]
                          if isinstance(r.get("cap"), int) and isinstance(r.get("records"), int) and r["records"] > r["cap"]])


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = getattr(config, "_musiceval", None)
    if not state or "run" not in state:
        return
    run = state["run"]
    tr = terminalreporter
    tr.section("musiceval gates")
    declared = {m.name for m in state["suite"].models}
    for title, about_model in (("about the declared model", True), ("self-checks of the suite (never gates of the model)", False)):
        gates = [g for g in run["gates"] if (subject_of(g, declared) == MODEL) == about_model]
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
    tr.write_line(f"results: {state['results_dir'] / 'results.json'}")
    tr.write_line(f"report:  {state['results_dir'] / 'report.html'}")


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
    line = f"{verdict.line}; report: {state['results_dir'] / 'report.html'}"
    colour = {"PASSED": "green", "FAILED": "red", "ERROR": "red"}.get(verdict.word, "yellow")
    if tr is not None:
        tr.write_line(line, **{colour: True, "bold": True})
    else:
        print(line)
