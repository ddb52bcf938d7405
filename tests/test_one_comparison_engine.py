"""``musiceval compare`` and the pytest regression gates are one engine and agree row for row.

Runs are built from the real CMI-Bench outputs of LTU and MU-LLaMA and the real MuChoMusic answers
of MiDashengLM in ../shared/data, gated by ``pytest evals/`` in a scratch project; each run is then
the baseline of another, and every regression gate of the new run must equal the row of
``musiceval compare BASELINE NEW`` for the same source and metric: outcome, verdict word, estimate,
interval. The same answers under two source labels (a config label and a one-file run's file
name) pair by their items, and every note of the comparison is true.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from musiceval import results

REPO = Path(__file__).resolve().parents[1]
SHARED = next((p / "shared" / "data" for p in Path(__file__).resolve().parents if (p / "shared" / "data").is_dir()),
              REPO.parent / "shared" / "data")
TASKS = ("GTZAN", "GS_key", "DSing", "EMO_arousal", "gtzan_beat", "VocalSet_tech")
N = 100  # records per task file: enough for every gate shape, quick on two cores


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    if not (SHARED / "cmi-bench" / "outputs" / "ltu").is_dir():
        pytest.skip(f"{SHARED} absent (../shared/data beside the repository)")
    (pytester.path / "evals").mkdir()
    shutil.copy(REPO / "evals" / "test_musiceval.py", pytester.path / "evals")
    for model in ("ltu", "mullama"):
        out = pytester.path / model
        out.mkdir()
        for task in TASKS:
            records = json.loads((SHARED / "cmi-bench" / "outputs" / model / f"{model}_{task}.jsonl").read_text("utf-8"))
            (out / f"{model}_{task}.jsonl").write_text(json.dumps(records[:N]), encoding="utf-8")
    return pytester


def _gated(project: pytest.Pytester, name: str, answers: str, results_dir: str, baseline: str = "", *args: str) -> dict:
    config = f'[[model]]\nname = "{name}"\n{answers}\n' + (f'[baseline]\nresults = "{baseline}"\n' if baseline else "")
    (project.path / "musiceval.toml").write_text(config, encoding="utf-8")
    project.runpytest_subprocess("evals", "-p", "no:cacheprovider", "-p", "no:randomly", "--musiceval-results-dir",
                                 str(project.path / results_dir), "--musiceval-cache-dir", str(project.path / "cache"), *args)
    return json.loads((project.path / results_dir / "results.json").read_text(encoding="utf-8"))


def _agree(project: pytest.Pytester, baseline: str, new: str, run: dict) -> int:
    gates = {(g["protocol"], g["source"], g["metric"]): g for g in run["gates"] if "/regression/" in g.get("check", "")}
    table = results.compare(project.path / baseline, project.path / new)
    rows = {(r.protocol.split("/")[0], r.protocol.partition("/")[2], r.metric): r for _, r in table.iterrows()}
    decided = {k: g for k, g in gates.items() if g["outcome"] != "N/A"}
    assert decided and set(decided) == set(rows), (sorted(set(decided) ^ set(rows)))
    for key, g in decided.items():
        row = rows[key]
        assert (row.non_inferior, row.verdict) == (g["outcome"], g["verdict"]), key
        assert row["diff"] == pytest.approx(g["estimate"]) and row.margin == pytest.approx(-g["threshold"])
        assert [row.ci_low, row.ci_high] == pytest.approx(g["ci"]), key
    assert not [n for n in table.attrs["notes"] if "not compared" in n], table.attrs["notes"]
    return len(decided)


def test_compare_and_the_regression_gates_agree_on_every_pair_of_cmi_bench_runs(project):
    for model, name in (("ltu", "LTU"), ("mullama", "MU-LLaMA")):
        _gated(project, name, f'[[model.answers]]\nprotocol = "mir"\ndir = "{model}"', f"r-{model}")
    compared = 0
    for old, new, name in (("ltu", "mullama", "MU-LLaMA"), ("mullama", "ltu", "LTU")):
        run = _gated(project, name, f'[[model.answers]]\nprotocol = "mir"\ndir = "{new}"', f"r-{new}-vs-{old}",
                     baseline=f"r-{old}")
        compared += _agree(project, f"r-{old}", f"r-{new}-vs-{old}", run)
    assert compared >= 2 * len(TASKS)


def test_the_same_answers_under_two_source_labels_pair_by_their_items(project):
    shutil.copy(SHARED / "muchomusic" / "dev_midashenglm.jsonl", project.path / "mc.jsonl")
    _gated(project, "MiDashengLM", '[[model.answers]]\nprotocol = "choice"\nfile = "mc.jsonl"\nlabel = "MuChoMusic"', "r-config")
    run = _gated(project, "MiDashengLM", "", "r-file", "r-config", "--musiceval-model", f"recorded:{project.path / 'mc.jsonl'}")
    gates = [g for g in run["gates"] if "/regression/" in g.get("check", "")]
    assert gates and {g["source"] for g in gates} == {"mc"} and all("same items" in g["name"] for g in gates)
    assert {g["verdict"] for g in gates} == {"non-inferior"}  # identical answers: exactly no difference
    table = results.compare(project.path / "r-config", project.path / "r-file")
    assert len(table) == len(gates) and set(table.verdict) == {"non-inferior"}
    assert any("source 'mc' paired with" in n and "'MuChoMusic': the same items" in n for n in table.attrs["notes"])
    _agree(project, "r-config", "r-file", run)
