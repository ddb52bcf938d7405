"""The JUnit file (``--junitxml``) written whole, saying the session's verdict.

pytest's junitxml plugin opens the file and writes it in place at the end of the session: on a full
disk it leaves a torn file and raises inside ``pytest_sessionfinish`` (a traceback, and the hooks
after it, the fixture teardown among them, never run). :func:`install` (at session start, on the
controller) gives pytest's writer object the class :class:`WholeLogXML`, whose writer goes through a
temporary sibling renamed into place and never raises: a file that cannot be written leaves none (a
stale one of an earlier run is removed too) and the failure is one line. musiceval's own
``pytest_sessionfinish`` calls :func:`write`, with the verdict among the properties, before it writes
results.json, so the verdict becomes ERROR when the JUnit file cannot be written (docs/hardening.md).
"""
from __future__ import annotations

import os
from typing import Any

import pytest

from musiceval.writes import cannot_write, remove_quietly

try:
    from _pytest.junitxml import LogXML, xml_key
except ImportError:  # pragma: no cover - junitxml is part of pytest
    LogXML, xml_key = None, None  # type: ignore[assignment,misc]

#: the fix a JUnit file that cannot be written names
JUNIT_FIX = "pass --junitxml FILE on a writable disk"


def logxml(config: pytest.Config) -> Any:
    """pytest's JUnit writer of this session (None without ``--junitxml``, and on xdist workers)."""
    return config.stash.get(xml_key, None) if xml_key is not None else None


def install(config: pytest.Config) -> None:
    """Give the session's JUnit writer the class :class:`WholeLogXML` (registered again so that
    pytest calls its writer). A writer of another class (a plugin's) is left alone."""
    xml = logxml(config)
    if xml is None or type(xml) is not LogXML:
        return
    manager = config.pluginmanager
    name = manager.get_name(xml)
    manager.unregister(xml)
    xml.__class__ = WholeLogXML
    manager.register(xml, name)


def set_properties(xml: Any, properties: dict[str, str]) -> None:
    """The JUnit file's global ``properties`` (replacing an earlier value of the same name)."""
    xml.global_properties[:] = [(k, v) for k, v in xml.global_properties if k not in properties]
    for name, value in properties.items():
        xml.add_global_property(name, value)


def write(xml: Any) -> str | None:
    """Write the JUnit file now, whole: pytest's own writer into ``.<name>.tmp`` beside it, flushed
    to disk and renamed into place. None when written, else the one line saying why not (no file is
    left: neither the temporary one nor a stale one of an earlier session, which would say another
    verdict). pytest does not write it again at the end of the session."""
    real = xml.logfile
    tmp = os.path.join(os.path.dirname(real), f".{os.path.basename(real)}.tmp")
    xml.musiceval_written, xml.musiceval_failure = True, None
    xml.logfile = tmp
    try:
        LogXML.pytest_sessionfinish(xml)
        _fsync(tmp)
        os.replace(tmp, real)
    except OSError as exc:
        remove_quietly(tmp)
        remove_quietly(real)
        xml.musiceval_failure = cannot_write(real, exc, JUNIT_FIX)
    except BaseException:
        remove_quietly(tmp)
        raise
    finally:
        xml.logfile = real
    return xml.musiceval_failure


def _fsync(path: str) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


if LogXML is not None:
    class WholeLogXML(LogXML):  # type: ignore[misc,valid-type]
        """pytest's ``LogXML``, whose file is written whole (see the module docstring)."""

        def pytest_sessionfinish(self, session: pytest.Session) -> None:  # type: ignore[override]
            if getattr(self, "musiceval_written", False):  # musiceval wrote it, with the verdict
                return
            if write(self) is not None and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

        def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
            failure = getattr(self, "musiceval_failure", None)
            if failure is None:
                super().pytest_terminal_summary(terminalreporter, config)
            elif config.get_verbosity() >= 0:
                terminalreporter.write_sep("-", f"no xml file: {failure}", red=True)
