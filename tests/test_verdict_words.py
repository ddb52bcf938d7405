"""The verdict word in the cases where it used to be wrong, read from every artefact a session writes
(the terminal's last line, results.json, report.md, the JUnit property) with the exit code:

- a required gate that did not run (no weights) is not a pass: INCONCLUSIVE, naming the gate and
  the command that fetches what it needs, unless ``[release] allow_skip`` names it, with a reason the
  verdict line and the report repeat;
- under ``--musiceval-strict`` a skipped self-check never decides the word;
- a model given on the command line in this repository is judged by the built-in defaults, not by
  the demo's rules (coverage as a finding, capped tagging, self-checks).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

GATES = '''
import numpy as np, pytest
from musiceval.records import ItemScores
from musiceval.protocols.checks import CheckGate

def about(gate, check):
    return CheckGate(gate, check=check, model="M", source="file", protocol="demo", rule=gate.rule_for(check))

def test_accuracy(gate):
    values = np.random.default_rng(0).normal(0.7, 0.1, 300)
    about(gate, "demo/accuracy/M/file/acc").greater_than_chance(ItemScores("acc", [str(i) for i in range(300)], values), 0.25,
                                                                name="accuracy beats 0.25")

@pytest.mark.parametrize("metric", ["clap_text"])
def test_needs_weights(gate, metric):
    gate.skip(f"{metric}: CLAP weights not found; run `huggingface-cli download laion/larger_clap_music`")

@pytest.mark.musiceval_self_check
def test_a_self_check_without_its_encoder(gate):
    gate.skip("text encoder 'clap:' unavailable; run `huggingface-cli download laion/larger_clap_music`")
'''


def _words(project: pytest.Pytester, out: pytest.RunResult) -> dict[str, str]:
    res = project.path / "res"
    run = json.loads((res / "results.json").read_text(encoding="utf-8"))
    junit = {p.get("name"): p.get("value") for p in ET.parse(project.path / "junit.xml").iter("property")}
    report = (res / "report.md").read_text(encoding="utf-8")
    return {"results.json": run["verdict"], "last line": out.outlines[-1].split(":")[1].strip(),
            "junit": junit["musiceval_verdict"], "report.md": next(w for w in ("PASSED", "FAILED", "INCONCLUSIVE", "ERROR")
                                                                     if f"musiceval: {w}" in report)}


def _run(project: pytest.Pytester, config: str, *args: str):
    (project.path / "musiceval.toml").write_text('[[model]]\nname = "M"\n[defaults]\nself_checks = true\n' + config)
    out = project.runpytest_subprocess("evals", "-p", "no:cacheprovider", "-p", "no:randomly", "--junitxml",
                                       str(project.path / "junit.xml"), "--musiceval-results-dir",
                                       str(project.path / "res"), *args)
    words = _words(project, out)
    assert len(set(words.values())) == 1, words
    return out, words["results.json"], json.loads((project.path / "res" / "results.json").read_text())


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "test_gates.py").write_text(GATES)
    return pytester


def test_a_required_gate_that_did_not_run_makes_the_word_inconclusive(project):
    out, word, run = _run(project, "")
    assert word == "INCONCLUSIVE" and out.ret == 1
    reason = next(r for r in run["verdict_detail"]["reasons"] if "did not run" in r)
    assert "test_needs_weights[clap_text]" in reason and "huggingface-cli download laion/larger_clap_music" in reason
    assert "huggingface-cli download laion/larger_clap_music" in out.outlines[-1]


def test_an_allowed_skip_passes_and_every_artefact_repeats_its_reason(project):
    out, word, run = _run(project, '[release.allow_skip]\n"gates/needs_weights/clap_*" = "no CLAP weights on this runner"\n')
    assert word == "PASSED" and out.ret == 0
    assert 'allowed to skip ([release] allow_skip "gates/needs_weights/clap_*": no CLAP weights on this runner): 1 gate(s)' \
        in out.outlines[-1]
    assert run["verdict_detail"]["allowed_skips"] and "no CLAP weights on this runner" in run["verdict_detail"]["line"]
    assert "no CLAP weights on this runner" in (project.path / "res" / "report.md").read_text(encoding="utf-8")
    assert "1 of 1 required gates passed" in out.outlines[-1]


def test_a_malformed_allowance_stops_the_session_naming_the_fix(project):
    (project.path / "musiceval.toml").write_text('[[model]]\nname = "M"\n[release.allow_skip]\n"demo/*" = ""\n')
    out = project.runpytest_subprocess("evals", "-p", "no:cacheprovider")
    assert out.ret == 2 and "[release.allow_skip] must map check-id patterns to reasons" in out.stderr.str()


def test_under_strict_a_skipped_self_check_never_decides_the_word(project):
    out, word, run = _run(project, '[release.allow_skip]\n"gates/needs_weights/*" = "no CLAP weights on this runner"\n',
                          "--musiceval-strict")
    assert word == "PASSED" and out.ret == 0, run["verdict_detail"]
    out, word, run = _run(project, "", "--musiceval-strict", "--musiceval-inconclusive", "xfail")
    assert word == "INCONCLUSIVE" and out.ret == 1  # the model's own skipped gate: undecided, and strict exits 1
    assert not any("self_check" in r for r in run["verdict_detail"]["reasons"]), run["verdict_detail"]["reasons"]


def _in_the_checkout(*args: str, results: Path) -> tuple[subprocess.CompletedProcess, dict]:
    out = subprocess.run([sys.executable, "-m", "pytest", "evals/", "-p", "no:randomly", "-p", "no:cacheprovider",
                          "--musiceval-results-dir", str(results), *args], cwd=REPO, capture_output=True, text=True,
                         timeout=900)
    return out, json.loads((results / "results.json").read_text(encoding="utf-8"))


def test_a_file_given_on_the_command_line_here_is_judged_by_the_defaults_not_the_demo_rules(tmp_path):
    """This repository's musiceval.toml (the demo) makes coverage a finding, caps tagging at 80 records
    and runs the self-checks; a file given with --musiceval-model gets none of that: the shipped
    200-question MuChoMusic slice FAILs coverage, and no self-check runs."""
    out, run = _in_the_checkout("--musiceval-model", "recorded:fixtures/choice/dev_midashenglm.jsonl", results=tmp_path / "r")
    last = out.stdout.strip().splitlines()[-1]
    assert run["verdict"] == "FAILED" and last.startswith("musiceval: FAILED: MiDashengLM") and out.returncode == 1
    coverage = next(g for g in run["gates"] if "/coverage/" in g["check"])
    assert coverage["outcome"] == "FAIL" and "covers 200 of 1,187 items" in coverage["name"]
    assert not run["meta"]["self_checks"] and run["meta"]["thresholds"]["choice"]["min_parse_rate"] == 0.9
    assert "do not apply to --musiceval-model: the built-in defaults do" in out.stdout
    # the demo's rules apply when asked for by name
    out, run = _in_the_checkout("--musiceval-model", "recorded:fixtures/choice/dev_midashenglm.jsonl",
                                "--musiceval-config", "musiceval.toml", "-k", "every_line", results=tmp_path / "demo")
    coverage = next(g for g in run["gates"] if "/coverage/" in g["check"])
    assert coverage["outcome"] == "FINDING"


def test_a_tagging_file_given_here_is_scored_whole(tmp_path):
    """The demo caps tagging at its first 80 records (CI time); a team's file is scored whole."""
    folder = tmp_path / "ours"
    folder.mkdir()
    shutil.copy(REPO / "fixtures" / "mir" / "outputs" / "ltu" / "ltu_MTT.jsonl", folder / "ours_MTT.jsonl")
    records = len(json.loads((folder / "ours_MTT.jsonl").read_text(encoding="utf-8")))
    assert records > 80
    _, run = _in_the_checkout("--musiceval-model", f"recorded:{folder}", "-k", "every_line", results=tmp_path / "r")
    (source,) = run["sources"]
    assert source["cap"] is None and source["records"] == records


def test_unpinned_data_is_named_in_every_artefacts_verdict_line(project):
    """An answers entry that says its benchmark's data has no pinned revision (what ``musiceval run``
    writes for an unpinned catalogue entry) is named at the end of the verdict line of the terminal,
    results.json, report.md and JUnit, with its reason in results.json; the word does not change,
    and ``musiceval report`` decides the same line again from the file."""
    shutil.copy(REPO / "fixtures" / "choice" / "dev_midashenglm.jsonl", project.path / "answers.jsonl")
    out, word, run = _run(project, '[release.allow_skip]\n"gates/needs_weights/*" = "no CLAP weights on this runner"\n'
                                   '[[model.answers]]\nprotocol = "choice"\nfile = "answers.jsonl"\nlabel = "mmau-music"\n'
                                   'unpinned = "which commit is v05.15.25 could not be established"\n')
    assert word == "PASSED" and out.ret == 0, run["verdict_detail"]
    assert out.outlines[-1].split("; report: ")[0].endswith("; unpinned: mmau-music"), out.outlines[-1]
    assert run["verdict_detail"]["unpinned"] == ["mmau-music: which commit is v05.15.25 could not be established"]
    assert run["verdict_detail"]["line"].endswith("; unpinned: mmau-music")
    assert "; unpinned: mmau-music" in (project.path / "res" / "report.md").read_text(encoding="utf-8")
    junit = {p.get("name"): p.get("value") for p in ET.parse(project.path / "junit.xml").iter("property")}
    assert any("unpinned: mmau-music" in str(v) for v in junit.values()), junit
    from musiceval.results.verdict_check import check_verdict

    assert check_verdict(run, "results.json") == "PASSED"
    run["verdict_detail"]["unpinned"] = []
    with pytest.raises(Exception, match="verdict_detail.unpinned"):
        check_verdict(run, "results.json")
