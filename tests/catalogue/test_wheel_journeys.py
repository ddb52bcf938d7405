"""The catalogue journeys of sampled answers and the new entries, run as a user runs them: the
``musiceval`` command of the wheel built from this checkout, installed into a fresh virtual
environment outside the checkout (tests/wheel_env.py), in a team folder that holds nothing of the
checkout. ``data list`` names the new entries; ``musiceval run --repeats 2`` with its default
output folder asks a sampling model (the fake OpenAI-compatible server) every question twice, and
the terminal's last line, results.json, report.md, report.html and the exit code say one verdict
(docs/evaluate-your-model.md, "Sampled answers")."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from musiceval.llm.fake_server import FakeOpenAIServer
from tests import wheel_env

pytestmark = pytest.mark.slow
WORDS = ("NOTHING DECIDED", "INCONCLUSIVE", "PASSED", "FAILED", "ERROR")


@pytest.fixture(scope="module")
def musiceval_bin(wheel_bin) -> Path:
    """``musiceval`` of a fresh venv with the wheel of this checkout installed (no network)."""
    return wheel_bin / "musiceval"


def by_seed(body: dict) -> str:
    """A sampling model: its letter follows the request's seed, so the repeats can differ."""
    return f"The correct answer is: ({'ABCD'[int(body.get('seed') or 0) % 4]})"


def test_data_list_of_the_installed_wheel_names_the_new_entries(musiceval_bin, tmp_path):
    done = wheel_env.run([str(musiceval_bin), "data", "list", "--json"], tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {row["name"]: row for row in json.loads(done.stdout)["benchmarks"]}
    assert rows["musicqa-judged"]["protocol"] == "judge" and rows["musicqa-judged"]["prepared_as"] == "musicqa"
    assert rows["airbench-foundation-music"]["protocol"] == "choice"
    assert rows["mmau-music"]["human_baselines"]["music"]["accuracy"] == 0.7822


def test_musiceval_run_with_repeats_from_the_installed_wheel_says_one_verdict(musiceval_bin, hummusqa_mirror, tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    with FakeOpenAIServer(reply=by_seed) as server:
        done = wheel_env.run([str(musiceval_bin), "run", "--model", f"openai-compatible:{server.base_url}#echo",
                              "--benchmarks", "hummusqa", "--data-root", str(hummusqa_mirror["data"]),
                              "--cache-dir", str(tmp_path / "cache"), "--no-progress", "--conditions", "correct,random",
                              "--repeats", "2", "--model-args", "temperature=0.7"], team)
        asked = len(server.bodies)
    (results_json,) = team.glob(".musiceval/runs/*/results/results.json")  # the default output folder
    results = json.loads(results_json.read_text(encoding="utf-8"))
    verdict = results["verdict"]
    assert asked == 4 * 2 * 2, done.stderr[-3000:]  # 4 questions x (correct, random) x 2 repeats
    words = {"terminal": done.stdout.strip().splitlines()[-1].split(":")[1].strip(), "results.json": verdict}
    for name in ("report.md", "report.html"):
        text = (results_json.parent / name).read_text(encoding="utf-8")
        words[name] = next(w for w in WORDS if f"musiceval: {w}:" in text)
    assert set(words.values()) == {verdict}, words
    assert done.returncode == (0 if verdict == "PASSED" else 1)
    agree = [g for g in results["gates"] if "agree across 2 sampled repeats" in g["name"]]
    assert agree and agree[0]["outcome"] == "FINDING" and agree[0]["n"] == 4
    assert results["meta"]["repeats"] == 2
    assert "covers 4 of 320 items" in json.dumps(results["gates"])


def test_an_entry_built_from_the_users_files_from_the_installed_wheel_says_one_verdict(musiceval_bin, tmp_path):
    """``cmi-bench/Guzheng_Tech`` as a team takes it: ``data prepare`` from its Guzheng_Tech99 folder,
    ``data check``, then ``musiceval run`` (default output folder) with an OpenAI-compatible model."""
    from tests.catalogue.test_cmibench_guzheng import _dataset

    folder, team, data = _dataset(tmp_path), tmp_path / "team", tmp_path / "data"
    team.mkdir()
    name, where = "cmi-bench/Guzheng_Tech", ["--data-root", str(data), "--no-progress"]
    prepared = wheel_env.run([str(musiceval_bin), "data", "prepare", name, "--questions", str(folder), "--audio-dir",
                              str(folder), *where], team, timeout=300)
    assert prepared.returncode == 0, prepared.stderr[-2000:]
    checked = wheel_env.run([str(musiceval_bin), "data", "check", name, *where], team, timeout=300)
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    with FakeOpenAIServer(reply=lambda body: "[('0.5000', '1.2000', 'Vibrato')]") as server:
        done = wheel_env.run([str(musiceval_bin), "run", "--model", f"openai-compatible:{server.base_url}#echo",
                              "--benchmarks", name, "--cache-dir", str(tmp_path / "cache"), *where], team)
        asked = len(server.bodies)
    (results_json,) = team.glob(".musiceval/runs/*/results/results.json")
    results = json.loads(results_json.read_text(encoding="utf-8"))
    verdict, last = results["verdict"], done.stdout.strip().splitlines()[-1]
    # the 79 clips with audio answered (the first recording's is missing); clips of identical audio come from the cache
    assert asked and "covers 79 of 94 items" in json.dumps(results), done.stderr[-3000:]
    words = {"terminal": last.split(":")[1].strip(), "results.json": verdict}
    for report in ("report.md", "report.html"):
        text = (results_json.parent / report).read_text(encoding="utf-8")
        words[report] = next(w for w in WORDS if f"musiceval: {w}:" in text)
    assert set(words.values()) == {verdict}, words
    assert done.returncode == (0 if verdict == "PASSED" else 1) and "unpinned: Guzheng_Tech" in last
