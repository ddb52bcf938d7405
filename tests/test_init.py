"""``musiceval init`` sets a repository up to gate its model, and the gates reach a repository
outside the checkout: the config collects them, an entry module imports them, the CI files run them.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from musiceval import __version__
from musiceval.cli import main
from musiceval.commands.init import github_workflow, gitlab_ci
from musiceval.commands.install_origin import from_direct_url

REPO = Path(__file__).resolve().parents[1]
SHARED = next((p / "shared" / "data" for p in Path(__file__).resolve().parents if (p / "shared" / "data").is_dir()),
              REPO.parent / "shared" / "data")


@pytest.fixture
def repo(tmp_path):
    """A model repository with answer files from ../shared/data (a MuChoMusic file, a CMI-Bench folder)."""
    if not (SHARED / "muchomusic").is_dir():
        pytest.skip(f"{SHARED} absent (../shared/data beside the repository)")
    runs = tmp_path / "runs"
    (runs / "cmi").mkdir(parents=True)
    shutil.copy(SHARED / "muchomusic" / "dev_midashenglm.jsonl", runs / "mc.jsonl")
    shutil.copy(REPO / "fixtures" / "mir" / "outputs" / "ltu" / "ltu_GTZAN.jsonl", runs / "cmi")
    (runs / "notes.csv").write_text("not, an, answer file\n", encoding="utf-8")
    return tmp_path


def test_init_writes_the_config_the_entry_module_and_ci_files_and_overwrites_nothing(repo, capsys):
    assert main(["init", str(repo), "--answers", str(repo / "runs"), "--model", "ours-v2"]) == 0
    out = capsys.readouterr()
    written = {p.relative_to(repo).as_posix() for p in repo.rglob("*") if p.is_file() and "runs" not in p.parts}
    assert written == {"musiceval.toml", "evals/test_musiceval.py", ".github/workflows/musiceval.yml",
                       ".gitlab/musiceval.gitlab-ci.yml"}
    config = (repo / "musiceval.toml").read_text(encoding="utf-8")
    assert 'name = "ours-v2"' in config and 'file = "runs/mc.jsonl"' in config and 'dir = "runs/cmi"' in config
    assert 'format = "dasheng-choice"' in config and "notes.csv" in out.err  # not an answer file: said, not declared
    assert "\ninstall: musiceval[sentence,bertscore]" in out.out and " (from " in out.out  # the line and its origin
    assert (repo / "evals" / "test_musiceval.py").read_text(encoding="utf-8") == (REPO / "evals" / "test_musiceval.py").read_text(encoding="utf-8")
    (repo / "musiceval.toml").write_text("# mine\n", encoding="utf-8")
    assert main(["init", str(repo)]) == 0
    assert (repo / "musiceval.toml").read_text(encoding="utf-8") == "# mine\n"
    assert capsys.readouterr().out.count("kept") == 4


def test_the_ci_files_are_the_ones_the_docs_show(tmp_path):
    """The page shows the files init writes for musiceval installed from a package index (no
    direct_url.json); its table gives the install line of every other origin (tests/test_install_origin.py)."""
    page = (REPO / "docs" / "use-in-your-ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", page, flags=re.S)
    from_index = from_direct_url(None, __version__, tmp_path)
    assert blocks == [github_workflow(from_index), gitlab_ci(from_index)]
    for block in blocks:
        yaml.safe_load(block)
    assert f"`{from_index.line()}`" in page


def test_install_names_the_line_and_a_bad_one_is_refused_before_anything_is_written(tmp_path, capsys):
    requirement = "musiceval[sentence,bertscore] @ git+https://github.com/ORG/musiceval@v0.1.0"
    assert main(["init", str(tmp_path / "team"), "--install", requirement]) == 2  # not a directory yet
    assert "not a directory" in capsys.readouterr().err
    (tmp_path / "team").mkdir()
    assert main(["init", str(tmp_path / "team"), "--install", "musiceval[sentence,bertscore] @@ x"]) == 2
    err = capsys.readouterr().err
    assert "--install" in err and "not a PEP 508 requirement" in err and len(err.strip().splitlines()) == 1
    assert not any((tmp_path / "team").iterdir())
    assert main(["init", str(tmp_path / "team"), "--install", requirement]) == 0
    assert f"install: {requirement} (from --install)" in capsys.readouterr().out
    for path in (".github/workflows/musiceval.yml", ".gitlab/musiceval.gitlab-ci.yml"):
        assert f'pip install "{requirement}"' in (tmp_path / "team" / path).read_text(encoding="utf-8")


def _gate_commands(workflow: str) -> list[str]:
    """The workflow's run steps, less the installs and ``musiceval setup`` (they need the network;
    this machine has musiceval and WordNet)."""
    steps = yaml.safe_load(workflow)["jobs"]["release-gates"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    return [r for r in runs if not r.startswith(("pip install", "musiceval setup"))]


def test_the_github_workflow_runs_the_gates_on_the_repository_init_set_up(repo):
    assert main(["init", str(repo), "--answers", str(repo / "runs"), "--model", "ours-v2"]) == 0
    config = (repo / "musiceval.toml").read_text(encoding="utf-8").replace("min_coverage = 1.0", "min_coverage = 0.1")
    (repo / "musiceval.toml").write_text(config, encoding="utf-8")
    (command,) = _gate_commands((repo / ".github" / "workflows" / "musiceval.yml").read_text(encoding="utf-8"))
    argv = shlex.split(command)
    assert argv[:2] == ["pytest", "evals/"]
    out = subprocess.run([sys.executable, "-m", *argv, "-p", "no:randomly", "-p", "no:cacheprovider"], cwd=repo,
                         capture_output=True, text=True, timeout=600)
    last = out.stdout.strip().splitlines()[-1]
    run = json.loads((repo / "musiceval-results" / "results.json").read_text(encoding="utf-8"))
    assert last.startswith(f"musiceval: {run['verdict']}: ours-v2:")
    assert (out.returncode == 0) == (run["verdict"] == "PASSED")
    assert (repo / "musiceval-results" / "junit.xml").is_file()
    assert {g["source"] for g in run["gates"] if g.get("source")} == {"mc", "GTZAN"}


def test_a_config_that_declares_a_model_but_collects_no_gate_says_how_to_get_them(tmp_path):
    (tmp_path / "musiceval.toml").write_text('[[model]]\nname = "m"\n', encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    out = subprocess.run([sys.executable, "-m", "pytest", "elsewhere", "-p", "no:cacheprovider"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert out.stdout.strip().splitlines()[-1].startswith("musiceval: ") and "musiceval init" in out.stdout
