"""``musiceval stability``: the same answers gated again under other seeds. A gate whose outcome
hangs on the seed is named with its flip rate, the word's changes are counted, and a gate far from
its bar that flips is a defect of its test (docs/regression-gates.md, "Stability under reseeds")."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


from musiceval.results.stability import DEFECT_RATE, stability

REPO = Path(__file__).resolve().parents[1]


def _gate(name: str, outcome: str, estimate: float = 0.5, bar: float = 0.0, ci: tuple = (0.4, 0.6)) -> dict:
    return {"name": name, "outcome": outcome, "estimate": estimate, "bar": bar, "ci": list(ci)}


def test_flip_rates_the_word_and_defects_from_results_files():
    runs = [(seed, {"verdict": word, "gates": [_gate("far", far), _gate("near", near, estimate=0.01, ci=(-0.05, 0.07)),
                                               _gate("finding", "FINDING")]})
            for seed, (word, far, near) in enumerate([("PASSED", "PASS", "PASS"), ("FAILED", "PASS", "FAIL"),
                                                      ("PASSED", "FAIL", "PASS"), ("PASSED", "PASS", "PASS")])]
    found = stability(runs)
    by = {g.name: g for g in found.gates}
    assert set(by) == {"far", "near"}  # a finding decides nothing, so it cannot flip a verdict
    assert by["near"].flip_rate == 0.25 and by["near"].modal == "PASS" and not by["near"].far
    assert by["far"].far and by["far"].flip_rate == 0.25 > DEFECT_RATE and by["far"].defect
    assert found.words == {"PASSED": 3, "FAILED": 1} and found.word_flips == 1 and not found.stable
    assert found.line().startswith("musiceval stability: PASSED in 3 of 4 reseeds; 2 of 2 deciding gates flip, 1 of them")
    steady = stability([(s, {"verdict": "PASSED", "gates": [_gate("far", "PASS")]}) for s in range(3)])
    assert steady.stable and steady.flipping == [] and steady.word_flips == 0


def test_a_gate_missing_from_some_sessions_counts_as_a_flip_there():
    found = stability([(0, {"verdict": "PASSED", "gates": [_gate("g", "PASS")]}), (1, {"verdict": "PASSED", "gates": []})])
    (gate,) = found.gates
    assert gate.outcomes == {"PASS": 1, "absent": 1} and gate.flip_rate == 0.5


GATES = '''
import numpy as np
from musiceval.records import ItemScores
from musiceval.protocols.checks import CheckGate

IDS = [str(i) for i in range(300)]

def about(gate, check):
    return CheckGate(gate, check=check, model="M", source="file", protocol="demo", rule=gate.rule_for(check))

def test_far(gate):
    values = np.random.default_rng(0).normal(0.7, 0.1, 300)
    about(gate, "demo/far/M/file/acc").greater_than_chance(ItemScores("acc", IDS, values), 0.25, name="far from its bar")

def test_seeded(gate, musiceval_seed):
    noise = np.random.default_rng(1).normal(0, 1, 300)
    noise = (noise - noise.mean()) / noise.std() * 0.05  # mean 0, sd 0.05: an interval about 0.011 wide
    values = 0.25 + (0.008 if musiceval_seed % 2 == 0 else -0.008) + noise  # decided, but near the bar
    about(gate, "demo/seeded/M/file/acc").greater_than_chance(ItemScores("acc", IDS, values), 0.25,
                                                              name="hangs on the seed")
'''


def test_the_command_runs_a_session_per_seed_and_names_what_flips(tmp_path):
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "test_gates.py").write_text(GATES)
    (tmp_path / "musiceval.toml").write_text('[[model]]\nname = "M"\n')
    done = subprocess.run([sys.executable, "-m", "musiceval", "stability", "--reseeds", "3", "--out", "stab", "--",
                           "evals", "-p", "no:cacheprovider"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 1, done.stdout + done.stderr  # the word changed with the seed
    report = json.loads((tmp_path / "stab" / "stability.json").read_text())
    assert report["seeds"] == [0, 1, 2] and report["words"] == {"PASSED": 2, "FAILED": 1} and report["word_flips"] == 1
    gates = {g["name"]: g for g in report["gates"]}
    assert gates["hangs on the seed"]["outcomes"] == {"PASS": 2, "FAIL": 1}
    assert gates["far from its bar"]["outcomes"] == {"PASS": 3} and gates["far from its bar"]["far_from_bar"]
    assert not any(g["defect"] for g in report["gates"])
    assert all((tmp_path / "stab" / f"seed-{k}" / "results.json").is_file() for k in range(3))
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "musiceval stability: PASSED in 2 of 3 reseeds; 1 of 2 deciding gates flip"
    assert "flips 33%: hangs on the seed: FAIL 1, PASS 2" in done.stdout


def test_the_command_sets_the_seed_itself(tmp_path, capsys):
    from musiceval.cli import main

    assert main(["stability", "--out", str(tmp_path), "--", "evals", "--musiceval-seed", "3"]) == 2
    assert "sets --musiceval-seed and --musiceval-results-dir itself" in capsys.readouterr().err
