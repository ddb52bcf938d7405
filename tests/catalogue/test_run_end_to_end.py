"""prepare -> generate -> score -> verdict, end to end, on CPU: the tiny Qwen2-Audio checkpoint the
tests build, loaded through the real ``hf:`` adapter, asked NSynth (release archive mirror) and
HumMusQA (hub cache mirror); every gate runs on what it answered, the coverage gate counts the items
with audio against the catalogue's item count, and the dataset versions enter the fingerprint."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _env(mirror) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(mirror["hub"]),
            "MUSICEVAL_URL_MIRROR": str(mirror["urls"]), "OMP_NUM_THREADS": "1"}


def test_musiceval_run_reaches_a_verdict_on_what_the_model_answered(tiny_qwen, nsynth_mirror, hummusqa_mirror, tmp_path):
    command = [sys.executable, "-m", "musiceval.cli", "run", "--model", f"hf:{tiny_qwen}", "--benchmarks", "nsynth,hummusqa",
               "--model-args", "max_new_tokens=4,device=cpu,num_threads=1", "--data-root", str(nsynth_mirror["data"]),
               "--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    work = tmp_path / "work"
    work.mkdir()
    # the default --out, as typed: a folder under .musiceval/runs/ of the working directory
    done = subprocess.run(command, env=_env(nsynth_mirror), capture_output=True, text=True, timeout=900, cwd=work)
    (out,) = (work / ".musiceval" / "runs").iterdir()
    assert (out / "results" / "results.json").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((out / "results" / "results.json").read_text())
    assert results["verdict"] in ("FAILED", "INCONCLUSIVE", "PASSED"), done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == (0 if results["verdict"] == "PASSED" else 1)
    assert results["verdict"] in done.stdout.strip().splitlines()[-1]
    gates = json.dumps(results)
    assert "covers 4 of 4,096 items" in gates and "covers 4 of 320 items" in gates
    answers = [json.loads(line) for line in (out / "nsynth.jsonl").read_text().splitlines()]
    assert {a["condition"] for a in answers} == {"correct", "random"}  # the factual format holds no other control
    choice = [json.loads(line) for line in (out / "hummusqa.jsonl").read_text().splitlines()]
    assert {a["condition"] for a in choice} == {"correct", "random", "noise", "text_only"}
    assert {a["item_id"] for a in answers} == {"bass_synthetic_068-049-025", "keyboard_electronic_001-021-127",
                                               "guitar_acoustic_010-066-100", "reed_acoustic_037-068-127"}
    datasets = results["meta"]["provenance"]["scorer"]["datasets"]
    assert datasets["hummusqa"]["revision"] == "ca7bad071bde0b27e55eca050f2e88b49ae01f56"
    assert set(datasets) == {"nsynth", "hummusqa"}
    assert 'file = "nsynth.jsonl"' in (out / "musiceval.toml").read_text()  # relative to the config: the folder travels
    # a second run, to a relative --out, answers from the response cache: nothing is generated again
    again = subprocess.run([*command, "--out", "again"], env=_env(nsynth_mirror), capture_output=True, text=True,
                           timeout=900, cwd=work)
    assert "0 generated" in again.stderr and "reused nsynth" in again.stderr
    assert again.returncode == done.returncode
    assert json.loads((work / "again" / "results" / "results.json").read_text())["verdict"] == results["verdict"]


def test_runs_on_two_dataset_versions_do_not_compare(tmp_path):
    from musiceval.provenance import check_comparable, fingerprint

    folder = tmp_path / "answers"
    folder.mkdir()
    (folder / "hummusqa.jsonl").write_text("{}\n")
    fps = []
    for revision in ("a" * 40, "b" * 40):
        (folder / "musiceval.datasets.json").write_text(json.dumps({"hummusqa.jsonl": {
            "benchmark": "hummusqa", "id": "mtg-upf/HumMusQA", "revision": revision, "questions_sha256": {"q": "1"},
            "audio_sha256": "2"}}))
        fps.append(fingerprint(protocols=["choice"], answer_files={"m/choice/hummusqa": folder / "hummusqa.jsonl"}))
    assert check_comparable(*fps) == [f"scorer.datasets.hummusqa.revision: {'a' * 40} (A) != {'b' * 40} (B)"]


def test_pytest_with_benchmarks_gates_the_live_model_on_them(tiny_qwen, hummusqa_mirror, tmp_path):
    results = tmp_path / "results"
    command = [sys.executable, "-m", "pytest", str(ROOT / "evals"), "-p", "no:randomly", "-p", "no:cacheprovider", "-q",
               "-k", "not text_encoder",  # the text-encoder self-checks judge no model: not this test's subject
               f"--musiceval-model=hf:{tiny_qwen}", "--musiceval-benchmarks=hummusqa",
               "--musiceval-model-args=max_new_tokens=4,device=cpu,num_threads=1",
               f"--musiceval-data-dir={hummusqa_mirror['data'].parent}", f"--musiceval-cache-dir={tmp_path / 'cache'}",
               f"--musiceval-results-dir={results}"]
    (hummusqa_mirror["data"].parent).mkdir(exist_ok=True)
    done = subprocess.run(command, env=_env(hummusqa_mirror), capture_output=True, text=True, timeout=900, cwd=str(ROOT))
    data = json.loads((results / "results.json").read_text())
    assert data["verdict"] in ("FAILED", "INCONCLUSIVE", "PASSED"), done.stdout[-3000:] + done.stderr[-3000:]
    assert "covers 4 of 320 items" in json.dumps(data)
    assert data["meta"]["provenance"]["scorer"]["datasets"]["hummusqa"]["items"] == 320
