"""The gates reach a team's own repository: the wheel built from this checkout, installed into a
fresh virtual environment without network (the wheel, plus the dependencies already installed),
gates a repository outside the checkout that holds only a ``musiceval.toml`` and answer files from
``../shared/data``, with ``pytest -n 2`` there, and gives the same gates and verdict as
``pytest evals/`` in the checkout on the same config.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import wheel_env

REPO, SHARED = wheel_env.REPO, wheel_env.SHARED
CONFIG = """
[[model]]
name = "ours-v2"
[[model.answers]]
protocol = "choice"
file = "runs/muchomusic.jsonl"
[[model.answers]]
protocol = "factual"
file = "runs/nsynth.jsonl"
[[model.answers]]
protocol = "mir"
dir = "runs/cmi-bench"
[defaults]
min_coverage = 0.01   # slices of the published files
"""


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return wheel_env.run(cmd, cwd)


@pytest.fixture(scope="module")
def installed(wheel_bin) -> Path:
    """The python of a fresh venv with the wheel of this checkout installed (no network)."""
    return wheel_bin / "python"


@pytest.fixture
def team_repo(tmp_path) -> Path:
    if not (SHARED / "muchomusic").is_dir():
        pytest.skip(f"{SHARED} absent (../shared/data beside the repository)")
    runs = tmp_path / "team" / "runs"
    (runs / "cmi-bench").mkdir(parents=True)
    shutil.copy(SHARED / "muchomusic" / "dev_midashenglm.jsonl", runs / "muchomusic.jsonl")
    shutil.copy(SHARED / "nsynth" / "dev_midashenglm.jsonl", runs / "nsynth.jsonl")
    for task in ("GTZAN", "GS_key"):
        records = json.loads((SHARED / "cmi-bench" / "outputs" / "ltu" / f"ltu_{task}.jsonl").read_text(encoding="utf-8"))
        (runs / "cmi-bench" / f"ltu_{task}.jsonl").write_text(json.dumps(records[:120]), encoding="utf-8")
    (tmp_path / "team" / "musiceval.toml").write_text(CONFIG, encoding="utf-8")
    return tmp_path / "team"


def _gates(results: Path) -> tuple[str, dict]:
    run = json.loads((results / "results.json").read_text(encoding="utf-8"))
    return run["verdict"], {g["name"]: (g["outcome"], g.get("estimate")) for g in run["gates"]}


def test_a_team_repository_with_only_a_config_and_answer_files_gets_the_same_gates(installed, team_repo, tmp_path):
    out = _run([str(installed), "-m", "pytest", "-n", "2", "-p", "no:randomly", "-p", "no:cacheprovider",
                "--musiceval-results-dir", str(tmp_path / "team-results")], team_repo)
    assert out.stdout.strip().splitlines()[-1].startswith("musiceval: "), out.stdout[-3000:] + out.stderr[-3000:]
    in_checkout = _run([sys.executable, "-m", "pytest", "evals/", "-n", "2", "-p", "no:randomly", "-p", "no:cacheprovider",
                        "--musiceval-config", str(team_repo / "musiceval.toml"),
                        "--musiceval-results-dir", str(tmp_path / "checkout-results")], REPO)
    team_verdict, team_gates = _gates(tmp_path / "team-results")
    verdict, gates = _gates(tmp_path / "checkout-results")
    assert team_gates == gates and len(gates) > 20
    assert team_verdict == verdict and (out.returncode == 0) == (in_checkout.returncode == 0) == (verdict == "PASSED")
    rows = json.loads((tmp_path / "team-results" / "results.json").read_text(encoding="utf-8"))["gates"]
    assert {g["model"] for g in rows} == {"ours-v2"}  # only the declared model's gates: no self-checks
