"""One verdict per session, the same word everywhere: for every way a session can end (a gate
passes or fails, a required gate is undecided, a test errors or times out, a baseline is refused,
the disk is full, an answer file is torn), the terminal's last line, results.json, report.md,
report.html, the JUnit file and the exit code agree (docs/gate-your-model.md, "What the verdict means").

Each case is a scratch project run in a subprocess, as a team would run it.
"""
from __future__ import annotations

import lzma
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

GATES = '''
import time
import numpy as np, pytest
from musiceval.records import ItemScores
from musiceval.protocols.checks import CheckGate

def s(values, condition="correct"):
    return ItemScores("m", ids=[str(i) for i in range(len(values))], values=values, condition=condition)

def about(gate, name):
    return CheckGate(gate, check=f"demo/{name}/M/file/m", model="M", source="file", protocol="demo",
                     rule=gate.rule_for(f"demo/{name}/M/file/m"))

def test_pass(gate):
    a = np.random.default_rng(0).normal(0.6, 0.1, 200)
    about(gate, "pass").paired_greater(s(a), s(a - 0.1, "random"), name="clear gain")
'''

CASES = {
    "passed": "",
    "failed": '''
def test_fail(gate):
    a = np.random.default_rng(1).normal(0.6, 0.1, 200)
    about(gate, "fail").paired_greater(s(a - 0.2), s(a, "random"), name="clear loss")
''',
    "inconclusive": '''
def test_undecided(gate):
    about(gate, "coin").greater_than_chance(s(np.random.default_rng(1).normal(0.25, 0.3, 12)), 0.25, name="coin")
''',
    "errored": '''
@pytest.fixture
def broken():
    raise RuntimeError("the adapter crashed while loading")

def test_errors(gate, broken):
    pass
''',
    "timeout": '''
@pytest.mark.timeout(1)
def test_hangs(gate):
    time.sleep(5)
''',
}
WORDS = {"passed": "PASSED", "failed": "FAILED", "inconclusive": "INCONCLUSIVE", "errored": "ERROR", "timeout": "ERROR"}


def _project(pytester: pytest.Pytester, extra: str, config: str = '[[model]]\nname = "M"\n') -> pytest.Pytester:
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "test_demo.py").write_text(GATES + extra, encoding="utf-8")
    (pytester.path / "musiceval.toml").write_text(config, encoding="utf-8")
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("evals", "-p", "no:cacheprovider", "-p", "no:randomly",
                                         "--musiceval-results-dir", str(pytester.path / "res"),
                                         "--junitxml", str(pytester.path / "junit.xml"), *args)


def _words(pytester: pytest.Pytester, out: pytest.RunResult) -> dict[str, str]:
    """The verdict word each artefact states."""
    res = pytester.path / "res"
    words = {"terminal": out.outlines[-1].split(":")[1].strip(), "exit": "0" if out.ret == 0 else "non-zero"}
    results = res / "results.json"
    if results.is_file():
        run = json.loads(results.read_text(encoding="utf-8"))
        words["results.json"] = run["verdict"]
        assert run["verdict_detail"]["word"] == run["verdict"]
    for name in ("report.md", "report.html"):
        if (res / name).is_file():
            text = (res / name).read_text(encoding="utf-8")
            words[name] = next(w for w in ("NOTHING DECIDED", "INCONCLUSIVE", "PASSED", "FAILED", "ERROR")
                               if f"musiceval: {w}:" in text)
    props = {p.get("name"): p.get("value") for p in ET.parse(pytester.path / "junit.xml").iter("property")}
    words["junit"] = props.get("musiceval_verdict", "absent")
    return words


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_artefact_says_the_same_word(pytester, case):
    out = _run(_project(pytester, CASES[case]))
    word = WORDS[case]
    words = _words(pytester, out)
    assert words.pop("exit") == ("0" if word == "PASSED" else "non-zero"), out.outlines[-5:]
    assert set(words.values()) == {word}, words
    assert set(words) == {"terminal", "results.json", "report.md", "report.html", "junit"}
    if case in ("errored", "timeout"):
        run = json.loads((pytester.path / "res" / "results.json").read_text(encoding="utf-8"))
        reason = run["verdict_detail"]["reasons"][0]
        assert ("the adapter crashed" in reason) if case == "errored" else ("timed out" in reason)
        assert "Traceback" not in out.outlines[-1]


def test_an_undecided_gate_opted_out_keeps_its_word_and_exits_0(pytester):
    out = _run(_project(pytester, CASES["inconclusive"]), "--musiceval-inconclusive", "xfail")
    words = _words(pytester, out)
    assert words.pop("exit") == "0" and set(words.values()) == {"INCONCLUSIVE"}


class _Full:
    """A conftest that makes the disk 'full' when musiceval writes ``name`` (or every file)."""

    def __init__(self, name: str | None):
        self.text = f'''
import errno, musiceval.report as report
_real = report.write_atomically
def _full(files):
    if {name!r} is None or any(p.name == {name!r} for p in files):
        raise report.ArtefactError("cannot write " + ({name!r} or "results.json") + ": No space left on device; "
                                   "free space or pass --musiceval-results-dir DIR on a writable disk")
    return _real(files)
report.write_atomically = _full
'''


def test_a_full_disk_is_an_error_never_a_passed_results_json(pytester):
    _project(pytester, "")
    (pytester.path / "evals" / "conftest.py").write_text(_Full("report.html").text, encoding="utf-8")
    out = _run(pytester)
    res = pytester.path / "res"
    run = json.loads((res / "results.json").read_text(encoding="utf-8"))
    assert run["verdict"] == "ERROR" and "No space left on device" in run["verdict_detail"]["reasons"][0]
    assert not any((res / name).exists() for name in ("report.html", "report.md", "scores.jsonl.xz", "scores.jsonl"))
    assert out.ret != 0 and out.outlines[-1].startswith("musiceval: ERROR:")
    assert _words(pytester, out)["junit"] == "ERROR"


def test_when_nothing_can_be_written_the_terminal_and_exit_code_still_say_error(pytester):
    _project(pytester, "")
    (pytester.path / "evals" / "conftest.py").write_text(_Full(None).text, encoding="utf-8")
    out = _run(pytester)
    assert not (pytester.path / "res" / "results.json").exists()
    assert out.ret != 0 and out.outlines[-1].startswith("musiceval: ERROR:") and "No space left" in out.outlines[-1]
    assert "INTERNALERROR" not in out.stdout.str() and "Traceback" not in out.stdout.str()


def test_a_torn_answer_file_fails_naming_the_line_in_every_artefact(pytester):
    lines = (REPO / "fixtures" / "choice" / "dev_midashenglm.jsonl").read_text(encoding="utf-8").splitlines()
    torn = "\n".join(lines[:39]) + "\n" + lines[39][:269] + "\n"
    (pytester.path / "mc.jsonl").write_text(torn, encoding="utf-8")
    (pytester.path / "evals").mkdir()
    shutil.copy(REPO / "evals" / "test_musiceval.py", pytester.path / "evals")
    (pytester.path / "musiceval.toml").write_text('[[model]]\nname = "M"\n[[model.answers]]\nprotocol = "choice"\n'
                                                  'file = "mc.jsonl"\n', encoding="utf-8")
    out = _run(pytester)
    words = _words(pytester, out)
    assert words.pop("exit") == "non-zero" and set(words.values()) == {"FAILED"}, words
    run = json.loads((pytester.path / "res" / "results.json").read_text(encoding="utf-8"))
    readable = next(g for g in run["gates"] if g["check"].startswith("choice/readable/"))
    assert readable["outcome"] == "FAIL" and "mc.jsonl:40" in readable["detail"]
    coverage = next(g for g in run["gates"] if g["check"].startswith("choice/coverage/"))
    assert coverage["outcome"] == "FAIL" and "covers 39 of 1,187 items" in coverage["name"]
    source = run["sources"][0]
    assert source["unreadable"] == 1 and source["records"] == 40 and source["answered"] == 39
    html = (pytester.path / "res" / "report.html").read_text(encoding="utf-8")
    assert "mc.jsonl:40" in html and "covers 39 of 1,187 items" in html


SECRET = "s3cr3t-TOKEN-zq"


def test_a_secret_in_the_model_spec_reaches_no_artefact_and_no_output(pytester):
    """``--musiceval-model`` with credentials in the URL: the terminal, every file of the results
    directory (parts included) and the JUnit file hold none of them."""
    spec = f"openai-compatible:http://user:{SECRET}@127.0.0.1:9/v1?token={SECRET}#m"
    _project(pytester, '''
def test_live(gate, music_lm, model_spec):
    gate.finding(f"answers of {model_spec}", estimate=0.0, detail=f"spec {model_spec}")
    gate.record_table("live", f"table of {model_spec}", [{"spec": model_spec}])
''')
    out = _run(pytester, "--musiceval-model", spec)
    captured = out.stdout.str() + out.stderr.str()
    assert SECRET not in captured and "user:***@127.0.0.1" in captured
    files = [p for p in pytester.path.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".xz", ".md", ".html", ".xml")]
    assert any(p.name == "results.json" for p in files) and any(p.name == "scores.jsonl.xz" for p in files)

    def text(p):
        return (lzma.decompress(p.read_bytes()) if p.suffix == ".xz" else p.read_bytes()).decode("utf-8", "replace")

    leaks = [str(p) for p in files if SECRET in text(p)]
    assert leaks == []


def test_report_and_compare_refuse_a_results_dir_whose_files_contradict_results_json(tmp_path, capsys):
    """A scores.jsonl.xz torn or changed after the run: ``musiceval report`` says so and exits 2, and
    a comparison refuses it as a baseline."""
    from musiceval import results
    from musiceval.cli import main
    from musiceval.results.files import ResultsError
    from tests.report_run import make_run

    make_run(tmp_path)
    assert main(["report", str(tmp_path)]) == 0
    scores = tmp_path / "scores.jsonl.xz"
    scores.write_bytes(scores.read_bytes()[: len(scores.read_bytes()) // 2])  # torn at half its size
    capsys.readouterr()
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "scores.jsonl" in err and "do not match what results.json recorded" in err
    with pytest.raises(ResultsError, match="torn or changed after the run"):
        results.load(tmp_path)


def test_building_a_source_is_not_cut_by_one_tests_timeout(pytester):
    """A large answer file takes long to read and score once per worker; pytest-timeout's timer
    pauses while the source is built, so a busy machine does not turn it into an ERROR."""
    shutil.copy(REPO / "evals" / "test_musiceval.py", _project(pytester, "").path / "evals")
    (pytester.path / "evals" / "test_demo.py").unlink()
    shutil.copy(REPO / "fixtures" / "choice" / "dev_midashenglm.jsonl", pytester.path / "mc.jsonl")
    (pytester.path / "musiceval.toml").write_text('[[model]]\nname = "M"\n[[model.answers]]\nprotocol = "choice"\n'
                                                  'file = "mc.jsonl"\n[defaults]\nmin_coverage = 0.1\n', encoding="utf-8")
    (pytester.path / "evals" / "conftest.py").write_text('''
import time
import musiceval.suite.runs as runs
_real = runs.build_protocol
def _slow(*args, **kwargs):
    time.sleep(3)  # longer than the timeout below
    return _real(*args, **kwargs)
runs.build_protocol = _slow
''', encoding="utf-8")
    out = _run(pytester, "--timeout", "2", "-k", "beats_chance or parse_rate")
    assert out.ret == 0 and out.outlines[-1].startswith("musiceval: PASSED"), out.outlines[-3:]
