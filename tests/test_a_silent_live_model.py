"""A live model whose spec holds a credential and whose server answers nothing, run as a team runs it
(``pytest evals/`` in a scratch project, in a subprocess; ``musiceval run``):

- the credential reaches no output: not the terminal (the fixture values pytest prints with a
  failing test, the assertion messages, the tracebacks), not the JUnit file, not a file of the
  results or cache directory;
- the tests that need the model's answers error with one line each, naming the model and saying it
  answered nothing, and the verdict is ERROR (not a traceback per test, not ``ValueError: no
  candidate texts``).

docs/hardening.md, "A live model that answers nothing".
"""
from __future__ import annotations

import lzma
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from musiceval.llm.fake_server import FakeOpenAIServer
from tests.fake_secrets import fake_key

REPO = Path(__file__).resolve().parents[1]
SECRET = fake_key("live0123456789abcdefSECRET")


class SilentServer(FakeOpenAIServer):
    """Serves ``/v1/models`` (model ``broken`` among them) and answers every chat request with a
    completion that holds no choice: the server is up and answers nothing."""

    def _answer(self, handler: Any, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)
        handler._send(200, {"id": "chatcmpl-silent", "object": "chat.completion", "created": 0,
                            "model": body.get("model", ""), "choices": []})


@pytest.fixture
def silent_spec():
    with SilentServer() as server:
        yield f"openai-compatible:http://user:{SECRET}@127.0.0.1:{server.port}/v1#broken", server


def _text(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".xz":
        data = lzma.decompress(data)
    return data.decode("utf-8", "replace")


def _leaks(*folders: Path) -> list[str]:
    return [str(p) for folder in folders if folder.exists() for p in folder.rglob("*")
            if p.is_file() and SECRET in _text(p)]


@pytest.mark.parametrize("declared", ["option", "config"])
def test_a_silent_server_behind_a_secret_spec_errors_in_one_line_and_leaks_nothing(pytester, silent_spec, declared):
    spec, server = silent_spec
    (pytester.path / "evals").mkdir()
    shutil.copy(REPO / "evals" / "test_musiceval.py", pytester.path / "evals")
    args = ["--musiceval-model", spec] if declared == "option" else []
    if declared == "config":
        (pytester.path / "musiceval.toml").write_text(f'[[model]]\nname = "ours"\nlive = "{spec}"\n', encoding="utf-8")
    res, cache, junit = pytester.path / "res", pytester.path / "cache", pytester.path / "junit.xml"
    out = pytester.runpytest_subprocess("evals", "-p", "no:cacheprovider", "-p", "no:randomly", "-n", "2",
                                        "--musiceval-results-dir", str(res), "--musiceval-cache-dir", str(cache),
                                        "--junitxml", str(junit), *args)
    assert server.requests, "the model was never asked"
    terminal = out.stdout.str() + out.stderr.str()
    assert SECRET not in terminal
    assert "user:***@127.0.0.1" in terminal  # the spec is shown, masked
    assert _leaks(res, cache, junit) == []
    last = out.outlines[-1]
    assert out.ret != 0 and last.startswith("musiceval: ERROR:") and "answered nothing" in last, last
    assert "Traceback" not in terminal and "no candidate texts" not in terminal
    reasons = [(case.get("name"), bad.get("message") or "", (bad.text or "").strip())
               for case in ET.parse(junit).iter("testcase") for bad in (*case.iter("error"), *case.iter("failure"))]
    assert len(reasons) >= 10, reasons  # the live tests of every module (answers, free-form, CMI-Bench)
    for name, message, text in reasons:
        assert "ModelAnsweredNothing" in message and "answered nothing" in message, (name, message)
        assert "\n" not in text, (name, text)  # one line, no traceback


def test_a_failing_test_never_shows_the_spec_it_was_given(pytester, silent_spec):
    """The last line of defence: a test of the team's own that fails holding the spec (an argument
    pytest prints, a local with ``-l``, the assertion's message) shows it masked, even with ``--tb=long``."""
    spec, _ = silent_spec
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "test_own.py").write_text('''
def test_own(model_spec, music_lm):
    seen = {"spec": model_spec, "model": music_lm}
    print("asked", model_spec)
    assert model_spec == "", f"unexpected {model_spec}"
''', encoding="utf-8")
    junit = pytester.path / "junit.xml"
    out = pytester.runpytest_subprocess("evals", "-p", "no:cacheprovider", "-p", "no:randomly", "--tb=long", "-l",
                                        "-rA", "--musiceval-results-dir", str(pytester.path / "res"),
                                        "--junitxml", str(junit), "-o", "junit_logging=all", "--musiceval-model", spec)
    terminal = out.stdout.str() + out.stderr.str()
    assert "model_spec = 'openai-compatible:http://user:***@127.0.0.1" in terminal  # the frame's argument, masked
    assert "OpenAICompatibleModel(spec='openai-compatible:http://user:***@" in terminal  # the adapter's repr
    assert SECRET not in terminal and _leaks(pytester.path / "res", junit) == []
