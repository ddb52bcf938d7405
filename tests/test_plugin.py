"""The pytest plugin end to end, in a scratch project run in a subprocess: options, markers,
strict mode, xdist merging into one results.json, reports and JUnit properties."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

THRESHOLDS = Path(__file__).resolve().parents[1] / "evals" / "thresholds.toml"

GATES = '''
import numpy as np, pytest
from musiceval.records import ItemScores

def s(values, condition="correct"):
    return ItemScores("m", ids=[str(i) for i in range(len(values))], values=values, condition=condition)

@pytest.mark.parametrize("k", range(6))
def test_pass(gate, k):
    rng = np.random.default_rng(k)
    a = rng.normal(0.6, 0.1, 200)
    gate.paired_greater(s(a), s(a - 0.1, "random"), name=f"pass {k}")

def test_inconclusive(gate):
    gate.greater_than_chance(s(np.random.default_rng(1).normal(0.25, 0.3, 12)), 0.25, name="coin")

def test_finding(gate):
    gate.finding("a finding", estimate=0.5)

@pytest.mark.dataset("fma")
def test_needs_fma(gate):
    gate.at_least(s([1.0] * 10), 0.5, name="never reached")
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "thresholds.toml").write_text(THRESHOLDS.read_text())
    (pytester.path / "evals" / "test_demo.py").write_text(GATES)
    return pytester


def _run(project: pytest.Pytester, *args: str):
    results = project.path / "res"
    result = project.runpytest_subprocess("evals", "-p", "no:cacheprovider", "--results-dir", str(results), *args)
    return result, results


def test_xdist_workers_merge_into_one_run(project):
    result, results = _run(project, "-n", "2", "--seed", "7", "--junitxml", "junit.xml")
    result.assert_outcomes(passed=7, skipped=1, xfailed=1)
    run = json.loads((results / "results.json").read_text())
    names = {g["name"] for g in run["gates"]}
    assert {f"pass {k}" for k in range(6)} <= names and "coin" in names
    assert sorted(p.name for p in (results / "parts").iterdir()) == ["gw0.jsonl", "gw1.jsonl"]
    assert run["meta"]["seed"] == 7 and run["meta"]["versions"]["musiceval"]
    assert run["counts"] == {"PASS": 6, "INCONCLUSIVE": 1, "FINDING": 1, "SKIPPED": 1}
    skipped = next(g for g in run["gates"] if g["outcome"] == "SKIPPED")
    assert "dataset 'fma' not found" in skipped["detail"] and "--data-dir" in skipped["detail"]
    assert all(g["p_value_holm"] >= g["p_value"] for g in run["gates"] if g.get("p_value") is not None)
    for name in ("report.md", "report.html", "scores.jsonl"):
        assert (results / name).stat().st_size > 0
    assert list((results / "plots").glob("*.png"))
    html = (results / "report.html").read_text()
    assert "data:image/png;base64," in html and "pass 3" in html
    props = {p.get("name"): p.get("value") for p in ET.parse(project.path / "junit.xml").iter("property")}
    assert props["gate[pass 0].outcome"] == "PASS" and "gate[pass 0].ci" in props


def test_strict_turns_skips_and_inconclusive_into_failures(project):
    result, results = _run(project, "--strict")
    assert result.ret != 0
    result.assert_outcomes(passed=7, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*--strict: a release gate may not be skipped*", "*INCONCLUSIVE coin*"])


def test_inconclusive_can_be_configured_to_fail(project):
    result, _ = _run(project, "-k", "inconclusive", "--inconclusive", "fail")
    result.assert_outcomes(failed=1)


def test_options_are_in_their_own_help_group(pytester):
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["musiceval: music LM evaluation gates:", "*--model*", "*--data-dir*", "*--thresholds*",
                                 "*--results-dir*", "*--seed*"])
    assert "release-gate mode" in result.stdout.str()


def test_markers_are_registered(pytester):
    result = pytester.runpytest_subprocess("--markers")
    for marker in ("@pytest.mark.gpu", "@pytest.mark.llm", "@pytest.mark.dataset", "@pytest.mark.slow"):
        assert marker in result.stdout.str()


def test_gpu_and_llm_markers_skip_with_reasons(pytester, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "thresholds.toml").write_text(THRESHOLDS.read_text())
    (pytester.path / "evals" / "test_m.py").write_text(
        "import pytest\n"
        "@pytest.mark.llm(cassette='fixtures/cassettes/x.yaml')\n"
        "def test_llm(gate): pass\n"
        "@pytest.mark.gpu\n"
        "def test_gpu(gate): pass\n")
    result = pytester.runpytest_subprocess("evals", "-rs", "-p", "no:cacheprovider", "--results-dir", str(pytester.path / "r"))
    out = result.stdout.str()
    assert "cassette 'fixtures/cassettes/x.yaml' is missing" in out and "MUSICEVAL_RECORD=1" in out
    assert "needs a CUDA GPU" in out or result.parseoutcomes().get("passed") == 2


def test_missing_thresholds_file_names_the_fix(pytester):
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "test_x.py").write_text("def test_x(gate): pass\n")
    result = pytester.runpytest_subprocess("evals", "-p", "no:cacheprovider", "--results-dir", str(pytester.path / "r"))
    result.stdout.fnmatch_lines(["*thresholds file*not found; pass --thresholds*"])
