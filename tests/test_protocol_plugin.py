"""A protocol from outside the package reaches everything: the module of docs/extending.md ("A
protocol"), installed under the ``musiceval.protocols`` and ``musiceval.formats`` entry points in a
temporary folder, and nothing else, gets its suite config section and answers options, ``musiceval
score tempo``, every release gate of ``pytest evals/``, regression against a baseline and the
provenance. Each step runs in a subprocess, as a team's CI would (the registries load entry points
once per process)."""
from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CLASSES = ("slow", "moderate", "fast")


def _docs_block(lang: str) -> str:
    """The ``lang`` block of docs/extending.md's protocol section, as a user copies it."""
    text = (REPO / "docs" / "extending.md").read_text(encoding="utf-8")
    section = text.split("## A protocol", 1)[1]
    return re.search(rf"```{lang}\n(.*?)```", section, re.S).group(1)


def _docs_command(program: str) -> list[str]:
    """The page's ``program`` command, run with this interpreter (``python -m program``)."""
    line = next(ln for ln in _docs_block("sh").splitlines() if ln.startswith(program + " "))
    return ["-m", *line.split()]


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> dict[str, str]:
    """The environment of a process that has the plugin installed (a dist-info with its entry points)."""
    site = tmp_path_factory.mktemp("site")
    (site / "tempo_plugin.py").write_text(_docs_block("python"), encoding="utf-8")
    info = site / "tempo_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tempo-plugin\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[musiceval.protocols]\ntempo = tempo_plugin\n\n"
                                           "[musiceval.formats]\ntempo = tempo_plugin\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MUSICEVAL_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])
    return env


def _answers(path: Path, *, accuracy: float, seed: int, n: int = 90, constant: str | None = None) -> Path:
    """``n`` tempo items on ``n // 3`` tracks; Correct answers right with probability ``accuracy``
    (or always ``constant``), a white-noise control answered at random."""
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        truth = CLASSES[k % 3]
        right = rng.random() < accuracy
        said = constant or (truth if right else rng.choice([c for c in CLASSES if c != truth]))
        rows.append({"id": f"q{k:03d}", "track": f"t{k // 3}", "tempo": truth, "answer": f"It sounds {said} to me."})
        rows.append({"id": f"q{k:03d}", "track": f"t{k // 3}", "tempo": truth, "condition": "noise",
                     "answer": f"Maybe {rng.choice(CLASSES)}."})
    lines = [json.dumps(r) for r in rows] + ['{"id": "torn', "[1, 2]"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _repo(tmp_path: Path, answers: Path, *, extra: str = "") -> Path:
    (tmp_path / "evals").mkdir(exist_ok=True)
    (tmp_path / "evals" / "test_musiceval.py").write_text("from musiceval.evals.release_gates import *  # noqa\n",
                                                          encoding="utf-8")
    (tmp_path / "musiceval.toml").write_text(
        "[tempo]\nmin_parse_rate = 0.75\n\n[defaults]\nmax_unreadable = 2\n\n"
        f'[[model]]\nname = "ours"\n[[model.answers]]\nprotocol = "tempo"\nfile = "{answers.name}"\n'
        f'strict = false\nexpected_items = 90\n{extra}', encoding="utf-8")
    return tmp_path


def _gates(repo: Path, env: dict[str, str], results: str, *, as_documented: bool = False
           ) -> tuple[subprocess.CompletedProcess, dict]:
    """docs/extending.md's ``pytest evals/ -n 4`` (``as_documented``; else in one process, the same
    gates faster on a 2-core machine), with the results directory named."""
    command = _docs_command("pytest") if as_documented else ["-m", "pytest", "evals/", "-n", "0"]
    out = _run([*command, "-p", "no:cacheprovider", "-p", "no:randomly", "-q", "--musiceval-results-dir", results],
               env, repo)
    return out, json.loads((repo / results / "results.json").read_text(encoding="utf-8"))


def _outcomes(results: dict, kind: str) -> dict[str, str]:
    return {g["name"]: g["outcome"] for g in results["gates"]
            if g.get("protocol") == "tempo" and g.get("role") == "gate" and kind in g["nodeid"]}


def test_the_suite_config_reads_the_plugin_section_and_answers_options(plugin, tmp_path):
    answers = _answers(tmp_path / "tempo.jsonl", accuracy=0.8, seed=1)
    repo = _repo(tmp_path, answers)
    script = """
import json, sys
from musiceval.suite.config import load_config
from musiceval.suite.schema import ConfigError
from musiceval.provenance import fingerprint
cfg = load_config(None, '.')
src = cfg.sources('tempo')
fp = fingerprint(protocols=['tempo'], seed=0)
errors = []
for text in ('[tempo]\\nmin_parse_rat = 0.5\\n',
             '[[model]]\\nname = "m"\\n[[model.answers]]\\nprotocol = "tempo"\\nfile = "tempo.jsonl"\\nstrict = "yes"\\n'):
    open('bad.toml', 'w').write(text)
    try:
        load_config('bad.toml', '.')
    except ConfigError as exc:
        errors.append(str(exc))
print(json.dumps({"section": cfg.thresholds['tempo'], "options": src[0].options, "errors": errors,
                  "versions": fp['scorer']['protocols']['tempo']['versions']}))
"""
    out = _run(["-c", script], plugin, repo)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["section"]["min_parse_rate"] == 0.75 and got["section"]["regression_margin"] == 0.02
    assert got["options"] == {"strict": False, "expected_items": 90}
    assert "min_parse_rat" in got["errors"][0] and "min_parse_rate" in got["errors"][0]
    assert "strict" in got["errors"][1] and "bool" in got["errors"][1]
    assert got["versions"] == {"tempo_parser": "1"}


def test_musiceval_score_scores_the_plugin_protocol_with_its_options(plugin, tmp_path):
    answers = _answers(tmp_path / "tempo.jsonl", accuracy=0.8, seed=1)
    help_text = _run(["-m", "musiceval", "score", "--help"], plugin, tmp_path)
    assert "tempo" in help_text.stdout
    out = _run(["-m", "musiceval", "score", "tempo", str(answers), "--json"], plugin, tmp_path)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    rows = [json.loads(ln) for ln in answers.read_text().splitlines()[:-2]]
    correct = [r for r in rows if r.get("condition", "correct") == "correct"]
    expected = sum(r["tempo"] in r["answer"] for r in correct) / len(correct)
    assert got["protocol"] == "tempo" and got["n"] == 90 and got["format"] == "tempo-jsonl"
    assert got["metrics"]["accuracy"] == pytest.approx(expected) and got["metrics"]["parse_rate"] == 1.0
    assert [c["name"] for c in got["chances"]["accuracy"]] == ["uniform chance 1/3", "best constant answer 'slow'"]
    assert got["n_failed"] == 2  # the torn line and the array: counted, named by line
    (tmp_path / "runs").mkdir()
    answers.rename(tmp_path / "runs" / "tempo.jsonl")
    strict = _run(_docs_command("musiceval"), plugin, tmp_path)  # as docs/extending.md shows it
    assert json.loads(strict.stdout)["metrics"]["parse_rate"] == 0.0  # no answer is a bare class word
    answers = tmp_path / "runs" / "tempo.jsonl"
    bad = _run(["-m", "musiceval", "score", "tempo", str(answers), "--strict", "maybe"], plugin, tmp_path)
    assert bad.returncode == 2 and "--strict" in bad.stderr


def test_the_release_gates_regression_and_provenance_reach_the_plugin_protocol(plugin, tmp_path):
    good = _repo(tmp_path / "v1", _answers((tmp_path / "v1").mkdir() or tmp_path / "v1" / "tempo.jsonl",
                                           accuracy=0.85, seed=2))
    out, results = _gates(good, plugin, "results", as_documented=True)
    gates = _outcomes(results, "test_")
    assert out.returncode == 0 and results["verdict"] == "PASSED", out.stdout[-3000:]
    for check in ("beats the strongest answer-blind strategy (", "listens", "parse rate"):
        assert any(check in name and outcome == "PASS" for name, outcome in gates.items()), (check, gates)
    chance = next(g for g in results["gates"] if g.get("check", "").startswith("tempo/beats_chance/"))
    assert "uniform chance 1/3: " in chance["detail"] and "best constant answer 'slow': " in chance["detail"]
    assert results["meta"]["provenance"]["scorer"]["protocols"]["tempo"]["versions"] == {"tempo_parser": "1"}
    assert "musiceval: PASSED" in out.stdout.strip().splitlines()[-1]

    lazy = _repo(tmp_path / "lazy", _answers((tmp_path / "lazy").mkdir() or tmp_path / "lazy" / "tempo.jsonl",
                                             accuracy=0.0, seed=2, constant="slow"))
    out, results = _gates(lazy, plugin, "results")
    assert out.returncode == 1 and results["verdict"] == "FAILED"
    assert _outcomes(results, "test_beats_chance")  # its one chance gate ran, and the constant answer failed it
    chance = next(g for g in results["gates"] if g.get("check", "").startswith("tempo/beats_chance/"))
    assert chance["outcome"] == "FAIL" and "beats the strongest answer-blind strategy (" in chance["name"]
    assert "best constant answer 'slow': " in chance["detail"] and "not beaten" in chance["detail"]

    baseline = f'\n[baseline]\nresults = "{(good / "results").as_posix()}"\n'
    worse = _repo(tmp_path / "v2", _answers((tmp_path / "v2").mkdir() or tmp_path / "v2" / "tempo.jsonl",
                                            accuracy=0.45, seed=3), extra=baseline)
    out, results = _gates(worse, plugin, "results")
    regression = _outcomes(results, "test_not_worse_than_the_baseline")
    assert regression == {"ours tempo accuracy not worse than ours by 0.02": "FAIL",  # 0.85 -> 0.45
                          "ours tempo parse_rate not worse than ours by 0.02": "PASS"}, regression  # 1.0 both
    assert out.returncode == 1 and results["verdict"] == "FAILED"
