"""A run's provenance records the bytes it read, not only what the lock file says
(docs/hardening.md "Provenance hashes what the run reads"):

- a prepared clip whose bytes changed after ``musiceval data prepare`` is not reused: ``musiceval
  run`` (and ``pytest --musiceval-benchmarks``, through the same ``ensure_prepared``) stops with one
  line naming the clip, the lock and the fix, before any model loads, instead of recording the
  clean clip's sha256 for audio it never read;
- ``musiceval compare`` notes a run whose provenance lacks a dataset the other run records;
- a malformed provenance field is named (file and field), not ``dictionary update sequence ...``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from musiceval.cli import main
from musiceval.catalogue import get_benchmark
from musiceval.catalogue.check import check
from musiceval.catalogue.lock import LOCK_NAME
from musiceval.catalogue.prepare import PrepareError, ensure_prepared, prepare

ROOT = Path(__file__).resolve().parents[2]


def _flip_one_byte(report) -> Path:
    clip = report.audio_root / report.lock.item_clips["guitar_acoustic_010-066-100"]
    data = bytearray(clip.read_bytes())
    data[len(data) // 2] ^= 0x01
    clip.write_bytes(bytes(data))
    return clip


def test_a_clip_changed_after_prepare_is_not_reused(nsynth_mirror):
    bench = get_benchmark("nsynth")
    report = prepare(bench, nsynth_mirror["data"], progress=False, log=lambda _: None)
    assert ensure_prepared(bench, nsynth_mirror["data"], progress=False).reused
    clip = _flip_one_byte(report)
    with pytest.raises(PrepareError) as refused:
        ensure_prepared(bench, nsynth_mirror["data"], progress=False, log=lambda _: None)
    line = str(refused.value)
    assert "\n" not in line and line.startswith(f"{clip}: its bytes changed since `musiceval data prepare nsynth` checked")
    assert str(report.directory / LOCK_NAME) in line and "`musiceval data prepare nsynth`" in line
    assert "`musiceval data check nsynth`" in line
    assert any("changed since it was checked" in p for p in check(bench, report.directory))  # data check agrees
    prepare(bench, nsynth_mirror["data"], progress=False, log=lambda _: None)  # the fix the line names
    assert ensure_prepared(bench, nsynth_mirror["data"], progress=False).reused


def test_musiceval_run_stops_before_the_model_loads(nsynth_mirror, tmp_path):
    prepare(get_benchmark("nsynth"), nsynth_mirror["data"], progress=False, log=lambda _: None)
    from musiceval.catalogue.lock import read_lock

    lock = read_lock(nsynth_mirror["data"] / "nsynth" / LOCK_NAME)
    clip = Path(lock.audio_root) / lock.item_clips["guitar_acoustic_010-066-100"]
    clip.write_bytes(clip.read_bytes()[:-1] + bytes([clip.read_bytes()[-1] ^ 1]))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(nsynth_mirror["hub"]),
           "MUSICEVAL_URL_MIRROR": str(nsynth_mirror["urls"])}
    done = subprocess.run([sys.executable, "-m", "musiceval.cli", "run", "--model", f"hf:{tmp_path / 'no-model-here'}",
                           "--benchmarks", "nsynth", "--data-root", str(nsynth_mirror["data"]), "--cache-dir",
                           str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--no-progress"],
                          env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "reused nsynth" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"musiceval: error: {clip}: its bytes changed since"), done.stderr
    assert not (tmp_path / "out" / "results").exists()


# ----------------------------------------------------------------------------- compare


def _run_dir(folder: Path, provenance) -> Path:
    """A finished run of model M (gate and per-item scores) whose results.json records ``provenance``."""
    from musiceval.report import write_run

    parts = folder / "parts"
    parts.mkdir(parents=True)
    rows = [{"type": "gate", "name": "acc beats chance", "outcome": "PASS", "model": "M", "protocol": "factual",
             "estimate": 0.3, "ci": [0.2, 0.4], "p_value": 0.001},
            {"type": "scores", "gate": "acc beats chance", "protocol": "factual", "source": "nsynth", "model": "M",
             "metric": "f1", "condition": "correct", "ids": [f"q{k}" for k in range(30)],
             "values": [(k % 3) / 2 for k in range(30)], "groups": None, "failures": []}]
    (parts / "w.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    write_run(folder, {"model": "M", "models": [{"name": "M"}], "provenance": provenance})
    return folder


def _provenance(datasets: dict | None) -> dict:
    scorer = {"protocols": {"factual": {"versions": {"extractor": "1"}}}, "data": {}, "seed": 0}
    if datasets is not None:
        scorer["datasets"] = json.loads(json.dumps(datasets))  # a copy: the tests edit it
    return {"musiceval": "0", "scorer": scorer, "model": {"spec": "M"}}


NSYNTH = {"nsynth": {"id": "nsynth-test", "revision": "", "questions_sha256": {"q": "1"}, "audio_sha256": "a" * 64}}


def test_compare_notes_a_run_whose_provenance_lacks_the_dataset(tmp_path, capsys):
    a = _run_dir(tmp_path / "a", _provenance(NSYNTH))
    b = _run_dir(tmp_path / "b", _provenance(None))
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "note: M [b]: no version of dataset 'nsynth' recorded (meta.provenance.scorer.datasets)" in out
    assert "M [a] records nsynth-test" in out and "cannot be shown to be the same data" in out


@pytest.mark.parametrize("field, value", [("scorer", "x"), ("scorer.datasets", "x"), ("scorer.datasets.nsynth", ["x"]),
                                          ("scorer.protocols", [1]), ("scorer.data", 7), ("", "x")])
def test_a_malformed_provenance_field_is_named(tmp_path, capsys, field, value):
    provenance = _provenance(NSYNTH)
    if field:
        *parents, last = field.split(".")
        node = provenance
        for key in parents:
            node = node[key]
        node[last] = value
    else:
        provenance = value
    a = _run_dir(tmp_path / "a", _provenance(NSYNTH))
    b = _run_dir(tmp_path / "b", provenance)
    assert main(["compare", str(a), str(b)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    where = "meta.provenance" + (f".{field}" if field else "")
    assert line.startswith(f"musiceval: error: {b / 'results.json'}: field '{where}' must be"), line
    assert "dictionary update sequence" not in line
