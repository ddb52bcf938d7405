"""A team's repository, end to end, the way a new user takes it: the wheel of this checkout installed
into a fresh virtual environment outside the checkout (:mod:`tests.wheel_env`), a new git repository
holding answer files of all four answer protocols (a MuChoMusic file, an NSynth factual file, a
MusicQA file, a CMI-Bench outputs folder with captioning and EMO tasks, from ../shared/data),
``musiceval init``, then **the commands of the CI file init wrote, read from that file**, in order
(its pip lines install the same wheel again; nothing is downloaded). Then a ``[baseline]`` that lacks
one task, and ``musiceval run`` on a tiny checkpoint with its default ``--out``, from a URL mirror.

What a CI run must give is checked from the files the product wrote: the same verdict word on the
log's last line, in results.json, report.md, report.html and the JUnit file, with the exit code;
no traceback for a known error; a results folder a CI job can keep (at most 10 MB).

Marked ``team_journey`` (``pytest tests/ -m team_journey`` runs it apart); it runs with the rest.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests import wheel_env
from tests.test_evals_on_a_user_model import _slice

pytestmark = [pytest.mark.slow, pytest.mark.team_journey]
SHARED = wheel_env.SHARED
#: the largest results folder a CI job should have to keep
MAX_ARTEFACT_BYTES = 10 * 2**20
#: the CMI-Bench tasks of the team's folder: captioning (METEOR needs WordNet), EMO, classification
CMI_TASKS = ("MusicCaps", "SDD", "EMO_arousal", "GTZAN")


@pytest.fixture(scope="module")
def user(tmp_path_factory) -> dict[str, Path]:
    """``{"bin": the fresh environment's bin/, "wheel": the wheel it was installed from}``."""
    if not (SHARED / "cmi-bench" / "outputs" / "ltu").is_dir():
        pytest.skip(f"{SHARED} absent (../shared/data beside the repository)")
    work = tmp_path_factory.mktemp("user")
    wheel = wheel_env.build_wheel(work)
    bin_dir = wheel_env.fresh_venv(work / "venv")
    wheel_env.install(bin_dir, f"musiceval[sentence,bertscore] @ {wheel.as_uri()}")
    return {"bin": bin_dir, "wheel": wheel}


@pytest.fixture(scope="module")
def initialised(user, tmp_path_factory) -> Path:
    """A new git repository with the team's answer files, set up by ``musiceval init``."""
    repo = tmp_path_factory.mktemp("team")
    runs = repo / "runs"
    (runs / "cmi-bench").mkdir(parents=True)
    _slice(SHARED / "muchomusic" / "dev_midashenglm.jsonl", runs / "muchomusic.jsonl", 200)
    _slice(SHARED / "nsynth" / "dev_midashenglm.jsonl", runs / "nsynth.jsonl", 200)
    _slice(SHARED / "musicqa" / "dev_midashenglm.jsonl", runs / "musicqa.jsonl", 120)
    for task in CMI_TASKS:
        _slice(SHARED / "cmi-bench" / "outputs" / "ltu" / f"ltu_{task}.jsonl", runs / "cmi-bench" / f"ours_{task}.jsonl", 120)
    assert _in(user, repo, "git init -q . && git add runs && git -c user.name=t -c user.email=t@t commit -qm answers").returncode == 0
    done = _in(user, repo, "musiceval init --answers runs --model ours-v2")
    assert done.returncode == 0, done.stdout + done.stderr
    return repo


@pytest.fixture
def team(initialised, tmp_path) -> Path:
    """This test's own copy of the initialised repository (tests may change it, in any order)."""
    shutil.copytree(initialised, tmp_path / "team", symlinks=True)
    return tmp_path / "team"


def _in(user: dict[str, Path], repo: Path, command: str, **env: str) -> subprocess.CompletedProcess:
    """``command`` in ``repo`` through bash, with the user's environment first on PATH (as CI activates it)."""
    path = f"{user['bin']}:{os.environ['PATH']}"
    return wheel_env.run(command, repo, env={"PATH": path, "VIRTUAL_ENV": str(user["bin"].parent), **env}, shell=True)


def _ci_steps(repo: Path) -> list[str]:
    """The ``run`` steps of the GitHub workflow init wrote, in order; the GitLab file runs the same."""
    workflow = yaml.safe_load((repo / ".github" / "workflows" / "musiceval.yml").read_text(encoding="utf-8"))
    (job,) = workflow["jobs"].values()
    steps = [s["run"] for s in job["steps"] if "run" in s]
    gitlab = yaml.safe_load((repo / ".gitlab" / "musiceval.gitlab-ci.yml").read_text(encoding="utf-8"))
    (gitlab_job,) = gitlab.values()
    assert gitlab_job["script"] == steps
    return steps


def _run_ci(user, repo: Path) -> tuple[int, str, Path]:
    """Every step of the CI file; ``(exit code of the last step, its log, the results folder)``."""
    workflow = yaml.safe_load((repo / ".github" / "workflows" / "musiceval.yml").read_text(encoding="utf-8"))
    (job,) = workflow["jobs"].values()
    uploaded = next(s["with"]["path"] for s in job["steps"] if "upload-artifact" in str(s.get("uses")))
    shutil.rmtree(repo / uploaded, ignore_errors=True)
    *setup, gates = _ci_steps(repo)
    for step in setup:
        done = _in(user, repo, step)
        assert done.returncode == 0, f"{step}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    done = _in(user, repo, gates)
    return done.returncode, done.stdout + done.stderr, repo / uploaded


def _verdict_everywhere(code: int, log: str, results: Path) -> str:
    """The one word, checked in every artefact; returns it."""
    run = json.loads((results / "results.json").read_text(encoding="utf-8"))
    word = run["verdict"]
    last = log.strip().splitlines()[-1]
    assert last.startswith(f"musiceval: {word}: ours-v2"), last
    assert code == (0 if word == "PASSED" else 1), (code, last)
    assert f"musiceval: {word}" in (results / "report.md").read_text(encoding="utf-8")
    assert f"musiceval: {word}" in (results / "report.html").read_text(encoding="utf-8")
    junit = ET.parse(results / "junit.xml").getroot()
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert props["musiceval_verdict"] == word
    return word


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_the_ci_file_init_wrote_gates_the_team_model_with_one_verdict(user, team):
    steps = _ci_steps(team)
    assert any(s.startswith("pip install") and "musiceval" in s for s in steps)
    assert "musiceval setup" in steps  # WordNet for METEOR, before the gates
    code, log, results = _run_ci(user, team)
    word = _verdict_everywhere(code, log, results)
    assert word == "FAILED", log[-4000:]  # slices of the benchmarks: the coverage gates fail, nothing errors
    run = json.loads((results / "results.json").read_text(encoding="utf-8"))
    assert not run["errors"] and not any("errored" in r for r in run["verdict_detail"]["reasons"])
    sources = {g["source"] for g in run["gates"] if g["outcome"] in ("PASS", "FAIL")}
    assert {"muchomusic", "nsynth", "musicqa", *CMI_TASKS} <= sources  # captioning decided: WordNet was set up
    assert "Traceback" not in log and not re.search(r"^E {3}", log, flags=re.M)
    assert not (results / "parts").exists()
    assert (results / "scores.jsonl.xz").is_file() and (results / "samples.jsonl.xz").is_file()
    assert _folder_bytes(results) <= MAX_ARTEFACT_BYTES
    finished = [line for line in log.splitlines() if re.match(r"musiceval: \[\d+/\d+\] ", line)]
    assert len(finished) == len(sources) and finished[-1].startswith(f"musiceval: [{len(sources)}/{len(sources)}]")


def test_a_known_error_is_one_line_with_its_fix_grouped_by_cause(user, team, tmp_path):
    """Before ``musiceval setup`` (in an environment of its own: the CI steps of the other tests put
    WordNet into theirs), captioning cannot be scored: the session is ERROR, each errored test prints
    one line, and the verdict names the cause once with the tests it hit."""
    bare = {"bin": wheel_env.fresh_venv(tmp_path / "venv")}
    wheel_env.install(bare["bin"], str(user["wheel"]))
    nltk = tmp_path / "no-nltk-data"
    nltk.mkdir()
    done = _in(bare, team, "pytest evals/ -n 2 -p no:randomly --musiceval-results-dir results -k 'MusicCaps or SDD'",
               NLTK_DATA=str(nltk), HOME=str(tmp_path))
    log = done.stdout + done.stderr
    if "musiceval: ERROR" not in log.strip().splitlines()[-1]:
        pytest.skip("WordNet is found outside the environment on this machine (a system-wide nltk_data)")
    assert "Traceback" not in log and not re.search(r"^E {3}", log, flags=re.M)
    last = log.strip().splitlines()[-1]
    assert "WordNetMissingError" in last and "musiceval setup" in last and re.search(r"\(\d+ tests: ", last)
    assert last.count("WordNetMissingError") == 1
    assert len(log.splitlines()) < 150, log


def test_a_baseline_lacking_a_task_gives_the_gates_verdict_not_an_error(user, team):
    baseline = team / "baseline" / "cmi-bench"
    baseline.mkdir(parents=True)
    for task in CMI_TASKS[:-1]:  # the previous release was never asked GTZAN
        _slice(SHARED / "cmi-bench" / "outputs" / "mullama" / f"mullama_{task}.jsonl", baseline / f"v1_{task}.jsonl", 120)
    config = team / "musiceval.toml"
    config.write_text(config.read_text(encoding="utf-8") + '\n[baseline]\nname = "v1"\n[[baseline.answers]]\n'
                      'protocol = "mir"\ndir = "baseline/cmi-bench"\n', encoding="utf-8")
    code, log, results = _run_ci(user, team)
    word = _verdict_everywhere(code, log, results)
    assert word in ("FAILED", "PASSED"), log[-4000:]
    run = json.loads((results / "results.json").read_text(encoding="utf-8"))
    regression = {g["source"]: g for g in run["gates"] if g["nodeid"].split("::")[-1].startswith("test_not_worse")
                  and g["outcome"] == "N/A"}
    assert "not in the baseline" in regression["GTZAN"]["detail"]
    decided = [g for g in run["gates"] if "/regression/" in str(g.get("check")) and g["outcome"] in ("PASS", "FAIL", "INCONCLUSIVE")]
    assert {g["source"] for g in decided} >= {"EMO_arousal"}
    assert _folder_bytes(results) <= MAX_ARTEFACT_BYTES


def test_musiceval_run_from_a_checkpoint_with_the_default_out(user, team, tmp_path):
    from tests.catalogue.conftest import NSYNTH_URL, nsynth_archive
    from tests.catalogue.mirror import tone_bytes, url_file

    urls = tmp_path / "urls"
    url_file(urls, NSYNTH_URL, nsynth_archive({f"bass_synthetic_06{k}-049-025": tone_bytes(110 * (k + 1)) for k in range(4)}))
    built = _in(user, team, "python -m musiceval.models.tiny qwen2_audio .musiceval/tiny-qwen2-audio")
    assert built.returncode == 0, built.stderr
    done = _in(user, team, "musiceval run --model hf:.musiceval/tiny-qwen2-audio --benchmarks nsynth --no-progress "
                           "--model-args max_new_tokens=4,device=cpu,num_threads=1",
               MUSICEVAL_URL_MIRROR=str(urls), HF_HUB_OFFLINE="1", MUSICEVAL_CACHE=str(tmp_path / "cache"))
    assert (team / ".musiceval" / "runs").is_dir(), done.stdout[-3000:] + done.stderr[-3000:]
    (out,) = (team / ".musiceval" / "runs").iterdir()
    run = json.loads((out / "results" / "results.json").read_text(encoding="utf-8"))
    assert run["verdict"] in ("PASSED", "FAILED", "INCONCLUSIVE"), done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1].startswith(f"musiceval: {run['verdict']}: ")
    assert done.returncode == (0 if run["verdict"] == "PASSED" else 1)
    assert "covers 4 of 4,096 items" in json.dumps(run["gates"])  # NSynth's test split, from the lock


def test_musiceval_stability_reruns_the_team_gates_under_other_seeds(user, team):
    """``musiceval stability`` from the installed wheel, in the repository init set up: a whole
    session per seed, and the word the same in each (the slices fail their coverage gates whatever
    the seed)."""
    assert _in(user, team, "musiceval setup").returncode == 0  # WordNet for METEOR, as the CI file runs it
    done = _in(user, team, "musiceval stability --reseeds 2 -- evals/ -n 2")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((team / ".musiceval" / "stability" / "stability.json").read_text(encoding="utf-8"))
    assert report["seeds"] == [0, 1] and report["words"] == {"FAILED": 2} and report["word_flips"] == 0
    assert done.stdout.strip().splitlines()[-1].startswith("musiceval stability: FAILED in 2 of 2 reseeds; ")
    assert all((team / ".musiceval" / "stability" / f"seed-{k}" / "results.json").is_file() for k in (0, 1))
