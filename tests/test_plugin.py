"""The pytest plugin end to end, in scratch projects run in a subprocess: namespaced options, the
suite config's validation, strict mode and release profiles, xdist merging into one results.json,
findings reported as skipped, no silent green, results-directory ownership and JUnit properties."""
from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest

from tests.fake_secrets import fake_key

GATES = '''
import numpy as np, pytest
from musiceval.records import ItemScores
from musiceval.protocols.checks import CheckGate

def s(values, condition="correct"):
    return ItemScores("m", ids=[str(i) for i in range(len(values))], values=values, condition=condition)

def about(gate, name):  # a gate about the declared model "M"
    return CheckGate(gate, check=f"demo/{name}/M/file/m", model="M", source="file", protocol="demo",
                     rule=gate.rule_for(f"demo/{name}/M/file/m"))

@pytest.mark.parametrize("k", range(6))
def test_pass(gate, k):
    rng = np.random.default_rng(k)
    a = rng.normal(0.6, 0.1, 200)
    about(gate, f"pass{k}").paired_greater(s(a), s(a - 0.1, "random"), name=f"pass {k}")

def test_inconclusive(gate):
    about(gate, "coin").greater_than_chance(s(np.random.default_rng(1).normal(0.25, 0.3, 12)), 0.25, name="coin")

def test_finding(gate):
    gate.finding("a finding", estimate=0.5)

@pytest.mark.dataset("fma")
def test_needs_fma(gate):
    gate.at_least(s([1.0] * 10), 0.5, name="never reached")

def test_missing_weights(gate):
    gate.skip("CLAP checkpoint not found; run huggingface-cli download laion/larger_clap_music")
'''

CONFIG = '''
[[model]]
name = "M"
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "test_demo.py").write_text(GATES)
    (pytester.path / "musiceval.toml").write_text(CONFIG)
    return pytester


def _run(project: pytest.Pytester, *args: str, results_name: str = "res"):
    results = project.path / results_name
    result = project.runpytest_subprocess("evals", "-p", "no:cacheprovider", "--musiceval-results-dir", str(results), *args)
    return result, results


def test_xdist_workers_merge_into_one_run(project):
    result, results = _run(project, "-n", "2", "--musiceval-seed", "7", "--junitxml", "junit.xml", "-W",
                           "error::pytest.PytestWarning", "--musiceval-inconclusive", "xfail")
    result.assert_outcomes(passed=6, skipped=3, xfailed=1)
    assert result.ret == 0  # the undecided gate is accepted on request, and the word still says so
    run = json.loads((results / "results.json").read_text())
    names = {g["name"] for g in run["gates"]}
    assert {f"pass {k}" for k in range(6)} <= names and "coin" in names
    assert not (results / "parts").exists()  # both workers' parts merged, then removed
    assert run["meta"]["seed"] == 7 and run["meta"]["versions"]["musiceval"]
    assert run["counts"] == {"PASS": 6, "INCONCLUSIVE": 1, "FINDING": 1, "N/A": 1, "SKIPPED": 1}
    na = next(g for g in run["gates"] if g["outcome"] == "N/A")
    assert "dataset 'fma' not found" in na["detail"] and "--musiceval-data-dir" in na["detail"]
    assert all(g["p_value_holm"] >= g["p_value"] for g in run["gates"] if g.get("p_value") is not None)
    assert {g["model"] for g in run["gates"] if g["name"].startswith("pass")} == {"M"}
    for name in ("report.md", "report.html", "scores.jsonl.xz"):
        assert (results / name).stat().st_size > 0
    junit = ET.parse(project.path / "junit.xml")
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert props["gate[pass 0].outcome"] == "PASS" and "gate[pass 0].ci" in props
    finding = next(tc for tc in junit.iter("testcase") if tc.get("name") == "test_finding")
    assert finding.find("skipped") is not None and "FINDING" in finding.find("skipped").get("message")
    assert run["verdict"] == props["musiceval_verdict"] == "INCONCLUSIVE"


def test_strict_fails_skips_that_could_apply_but_not_those_that_cannot(project):
    result, results = _run(project, "--musiceval-strict", "--musiceval-inconclusive", "xfail")
    assert result.ret == 1  # strict: undecided and skipped required gates exit 1 even under xfail
    run = json.loads((results / "results.json").read_text())
    assert run["verdict"] == "INCONCLUSIVE"
    reasons = run["verdict_detail"]["reasons"]
    assert any("a required gate did not run: CLAP checkpoint not found" in r for r in reasons)
    assert any(r.startswith("undecided: coin") for r in reasons)
    assert not any("fma" in r for r in reasons)  # not applicable (no dataset given): never required
    # the finding, the missing weights and the not-applicable dataset are skipped tests; under strict
    # the undecided coin fails its test (no xfail)
    result.assert_outcomes(passed=6, skipped=3, failed=1)


def test_release_profile_decides_what_strict_requires(project):
    (project.path / "musiceval.toml").write_text(CONFIG + '\n[release]\nrequired = ["demo/pass*"]\n')
    result, _ = _run(project, "--musiceval-strict", "-k", "pass or missing_weights or fma")
    result.assert_outcomes(passed=6, skipped=2)
    assert result.ret == 0
    (project.path / "musiceval.toml").write_text(CONFIG + '\n[release]\nrequired = ["demo/pass*", "demo/never/*"]\n')
    result, _ = _run(project, "--musiceval-strict", "-k", "pass", results_name="res2")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*required check without a PASS: demo/never/*"])


def test_a_session_that_decides_nothing_about_the_model_fails_unless_allowed(project):
    result, _ = _run(project, "-k", "finding or fma or coin")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["musiceval: NOTHING DECIDED: M:*no gate about the declared model decided anything*"])
    result, _ = _run(project, "-k", "finding or fma or coin", "--musiceval-allow-empty", results_name="res2")
    assert result.ret == 0


def test_a_config_rule_turns_a_gate_into_a_finding_with_its_reason(project):
    (project.path / "musiceval.toml").write_text(CONFIG + '\n[checks."demo/pass0/*"]\ngate = false\nreason = "demo"\n')
    result, results = _run(project, "-k", "pass")
    result.assert_outcomes(passed=5, skipped=1)
    gate = next(g for g in json.loads((results / "results.json").read_text())["gates"] if g["name"] == "pass 0")
    assert gate["outcome"] == "FINDING" and gate["role"] == "finding" and "demo" in gate["role_reason"]


def test_an_undecided_required_gate_is_not_a_pass_unless_the_user_opts_out(project):
    result, results = _run(project, "-k", "inconclusive or pass")
    result.assert_outcomes(failed=1, passed=6)
    assert result.ret == 1 and json.loads((results / "results.json").read_text())["verdict"] == "INCONCLUSIVE"
    result.stdout.fnmatch_lines(["musiceval: INCONCLUSIVE: M: 6 of 7 required gates passed, 1 inconclusive*"
                                 "undecided: coin (about * items would decide it)*"])
    assert result.outlines[-1].startswith("musiceval: INCONCLUSIVE")
    result, results = _run(project, "-k", "inconclusive or pass", "--musiceval-inconclusive", "xfail", results_name="res2")
    result.assert_outcomes(xfailed=1, passed=6)
    assert result.ret == 0 and json.loads((results / "results.json").read_text())["verdict"] == "INCONCLUSIVE"


def test_unknown_config_key_is_a_usage_error_naming_it(project):
    (project.path / "musiceval.toml").write_text(CONFIG + "\n[choice]\nmin_parse_ratte = 0.9\n")
    result, _ = _run(project)
    assert result.ret == 2
    result.stderr.fnmatch_lines(["*[[]choice[]]: unknown key 'min_parse_ratte'; did you mean 'min_parse_rate'*"])


def test_a_missing_data_dir_and_an_unknown_model_prefix_are_usage_errors(project):
    result, _ = _run(project, "--musiceval-data-dir", "/does/not/exist")
    assert result.ret == 2 and "no such directory" in result.stderr.str()
    result, _ = _run(project, "--musiceval-model", "nosuch:thing")
    assert result.ret == 2 and "no adapter for 'nosuch'" in result.stderr.str()


def test_a_project_conftest_may_define_model_and_seed_and_xdist_may_be_off(project):
    (project.path / "conftest.py").write_text(
        "def pytest_addoption(parser):\n    parser.addoption('--model')\n    parser.addoption('--seed')\n")
    result, _ = _run(project, "-p", "no:xdist", "-k", "pass", "--model", "mine", "--seed", "3")
    result.assert_outcomes(passed=6)


def test_the_gate_fixture_works_without_a_config_file(pytester):
    pytester.makepyfile(test_g="from musiceval.records import ItemScores\n"
                               "def test_g(gate):\n"
                               "    gate.at_least(ItemScores('m', ids=list('abcdefghij'), values=[1.0]*10), 0.5, name='g')\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--musiceval-results-dir", str(pytester.path / "r"),
                                           "--musiceval-allow-empty")
    result.assert_outcomes(passed=1)


def test_a_results_dir_held_by_a_live_session_is_refused_and_never_wiped(project):
    results = project.path / "res"
    results.mkdir()
    (results / ".session.lock").write_text(json.dumps({"pid": os.getppid(), "session": "other"}))
    (results / "parts").mkdir()
    (results / "parts" / "other-main.jsonl").write_text('{"type": "gate"}\n')
    result, _ = _run(project)
    assert result.ret == 2 and "in use by another running session" in result.stderr.str()
    assert (results / "parts" / "other-main.jsonl").exists()


def test_sessions_in_one_results_dir_keep_each_others_parts(project):
    """A session removes its own parts once merged, never another's (a session that did not finish)."""
    _run(project, "-k", "pass")
    results = project.path / "res"
    (results / "parts").mkdir()
    (results / "parts" / "20260101-000000-unfinished-main.jsonl").write_text('{"type": "gate"}\n')
    _run(project, "-k", "inconclusive", "--musiceval-allow-empty")
    assert [p.name for p in (results / "parts").glob("*.jsonl")] == ["20260101-000000-unfinished-main.jsonl"]
    run = json.loads((results / "results.json").read_text())
    assert {g["name"] for g in run["gates"]} == {"coin"}  # the latest session's results only


def test_options_are_namespaced_in_their_own_help_group(pytester):
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["musiceval: music LM release gates:", "*--musiceval-config*", "*--musiceval-model*",
                                 "*--musiceval-data-dir*", "*--musiceval-results-dir*", "*--musiceval-seed*"])
    assert "  --model " not in result.stdout.str()


def test_markers_are_registered(pytester):
    result = pytester.runpytest_subprocess("--markers")
    for marker in ("@pytest.mark.gpu", "@pytest.mark.llm", "@pytest.mark.dataset", "@pytest.mark.slow"):
        assert marker in result.stdout.str()


def test_llm_marker_skips_without_a_cassette_even_with_a_key(pytester, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", fake_key("not-a-real-key"))
    pytester.makepyfile(test_m="import pytest\n"
                               "@pytest.mark.llm(cassette='fixtures/cassettes/x.yaml')\n"
                               "def test_llm(gate): pass\n")
    result = pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider", "--musiceval-results-dir",
                                           str(pytester.path / "r"), "--musiceval-allow-empty")
    result.assert_outcomes(skipped=1)
    assert "cassette 'fixtures/cassettes/x.yaml' is missing" in result.stdout.str()


GROUPED = '''
import os, pytest

@pytest.mark.parametrize("group", ["a", "b"])
@pytest.mark.parametrize("k", range(4))
def test_grouped(gate, group, k):
    with open(os.path.join(os.environ["WHERE"], f"{group}-{k}"), "w") as fh:
        fh.write(os.environ["PYTEST_XDIST_WORKER"])
    gate.finding(f"ran {group} {k}", estimate=1.0)
'''


@pytest.fixture
def grouped(project, monkeypatch):
    """The scratch project with GROUPED tests in xdist groups "a" and "b"; each test writes the
    worker that ran it into ``<project>/where/<group>-<k>``."""
    (project.path / "evals" / "test_demo.py").write_text(GROUPED)
    (project.path / "evals" / "conftest.py").write_text(
        "import pytest\n"
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        item.add_marker(pytest.mark.xdist_group(item.callspec.params['group']))\n")
    (project.path / "where").mkdir()
    monkeypatch.setenv("WHERE", str(project.path / "where"))
    return project


def test_each_xdist_group_runs_on_one_worker_with_plain_n(grouped):
    """`pytest -n N` (no --dist) distributes as loadgroup, and the group suffix xdist reads reaches
    the scheduler on this pytest (xdist's own write of it is lost from pytest 9.2 on); results and
    cassettes keep the plain node id."""
    result, results = _run(grouped, "-n", "2", "--musiceval-allow-empty")
    result.assert_outcomes(skipped=8)
    where = grouped.path / "where"
    workers = {g: {(where / f"{g}-{k}").read_text() for k in range(4)} for g in "ab"}
    assert all(len(w) == 1 for w in workers.values()), workers
    run = json.loads((results / "results.json").read_text())
    assert sorted(g["nodeid"] for g in run["gates"]) == sorted(
        f"evals/test_demo.py::test_grouped[{k}-{g}]" for g in "ab" for k in range(4))


def test_an_explicit_dist_is_kept(grouped, monkeypatch):
    """`--dist load` given by the user (here through PYTEST_ADDOPTS) is not turned into loadgroup:
    no test gets the group suffix."""
    for dist, suffixed in (("--dist load", False), ("", True)):
        monkeypatch.setenv("PYTEST_ADDOPTS", dist)
        result, _ = _run(grouped, "-n", "2", "-v", "--musiceval-allow-empty", results_name=f"res{bool(dist)}")
        result.assert_outcomes(skipped=8)
        ran = [line for line in result.outlines if "SKIPPED" in line and "test_grouped[" in line]
        assert len(ran) == 8 and all(("]@" in line) == suffixed for line in ran), ran


@pytest.mark.parametrize("sources, self_checks, threads",
                         [(1, False, 4), (2, False, 2), (4, False, 1), (5, False, 4), (9, False, 4), (1, True, 1)])
def test_each_worker_gets_the_cores_of_the_workers_without_work(monkeypatch, sources, self_checks, threads):
    """Torch threads per xdist worker: the cores divided among the workers that have a source to
    build (one answer source on -n 4 gets every core), every core for each worker when sources
    outnumber workers (the last one running alone uses them all), the cores divided among all
    workers for the self-checks; idle OpenMP threads sleep whenever a worker runs more than one."""
    import sys

    from musiceval.pytest_plugin import session

    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    monkeypatch.setattr(session.os, "cpu_count", lambda: 4)
    monkeypatch.delitem(sys.modules, "torch", raising=False)  # this process's torch keeps its threads
    session._share_cpus_between_workers(sources, self_checks)
    assert {os.environ[v] for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")} == {str(threads)}
    assert os.environ.get("OMP_WAIT_POLICY") == ("PASSIVE" if threads > 1 else None)

