"""Errors that named the wrong input, or none (docs/hardening.md "No traceback: one line naming the
input and the fix"): each is now one line naming the file (or flag) and the fix.

- an ontology whose genre class has no subclasses said ``None: no item could be scored ... check
  --format (got None)``;
- a lock file nested too deeply said ``input: nested too deeply``;
- ``--n-permutations 99999999999999999999`` ran unbounded (it has a maximum now, and says why);
- a deeply nested ``[tool.musiceval]`` in pyproject.toml: pytest parses pyproject.toml itself before
  any plugin loads, so the plugin cannot catch pytest's RecursionError there (documented); where
  pytest does not parse the file (``-c FILE``), and in ``musiceval init``, it is one line.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from musiceval.cli import main

REPO = Path(__file__).resolve().parents[1]
DEEP = "[" * 5000 + "]" * 5000


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_an_ontology_whose_genre_class_has_no_subclasses_names_the_ontology(tmp_path, capsys):
    ontology = tmp_path / "onto.json"
    ontology.write_text(json.dumps([{"id": "/m/0kpv1t", "name": "Music genre", "child_ids": []}]), encoding="utf-8")
    assert main(["score", "triplets", "--triplets", "genre", "--ontology", str(ontology), "--no-progress",
                 "--cache-dir", str(tmp_path / "cache")]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"musiceval: error: {ontology}: class /m/0kpv1t (Music genre) has 0 subclasses"), line
    assert "--ontology" in line and "None" not in line and "--format" not in line


def test_a_triplet_file_with_no_rows_names_the_file(tmp_path, capsys):
    csv = tmp_path / "triplets.csv"
    csv.write_text("anchor,positive,negative\n", encoding="utf-8")
    assert main(["score", "triplets", "--triplets", str(csv), "--no-progress", "--cache-dir", str(tmp_path / "c")]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"musiceval: error: {csv}: no triplet") and "None" not in line


def test_a_lock_file_nested_too_deeply_is_named(tmp_path, capsys):
    lock = tmp_path / "nsynth" / "musiceval.lock.json"
    lock.parent.mkdir()
    lock.write_text(DEEP, encoding="utf-8")
    assert main(["data", "check", "nsynth", "--data-root", str(tmp_path)]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"musiceval: error: {lock}: ") and "nested too deeply" in line
    assert "musiceval data prepare nsynth" in line


def test_a_malformed_lock_field_is_named(tmp_path, capsys):
    lock = tmp_path / "nsynth" / "musiceval.lock.json"
    lock.parent.mkdir()
    lock.write_text(json.dumps({"benchmark": "nsynth", "source": "x", "question_files": {}, "audio_root": "a", "items": 1}))
    assert main(["data", "check", "nsynth", "--data-root", str(tmp_path)]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"musiceval: error: {lock}: field 'source' must be an object") and "dictionary update" not in line


def test_n_permutations_has_a_maximum(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["score", "factual", "fixtures/factual/nsynth_midashenglm.jsonl", "--vocab", "nsynth",
              "--n-permutations", "99999999999999999999"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith("argument --n-permutations: expected an integer in [1, 1000000], got '99999999999999999999'")


def test_n_permutations_in_the_config_has_the_same_maximum(tmp_path):
    from musiceval.suite.config import load_config
    from musiceval.suite.schema import ConfigError

    (tmp_path / "musiceval.toml").write_text("[factual]\nn_permutations = 99999999999999999999\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"n_permutations.*an integer in \[1, 1000000\]"):
        load_config(None, tmp_path)


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_a_deeply_nested_tool_musiceval_table(tmp_path):
    (tmp_path / "pyproject.toml").write_text(f"[tool.musiceval]\nx = {DEEP}\n", encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    # pytest itself reads pyproject.toml before any plugin loads: its own RecursionError (documented)
    done = _pytest(tmp_path)
    assert done.returncode == 1 and "RecursionError" in done.stderr
    # where pytest does not read the file (-c FILE), the plugin names it in one line
    done = _pytest(tmp_path, "-c", "pytest.ini")
    assert done.returncode == 2 and "Traceback" not in done.stdout + done.stderr
    assert f"musiceval: {tmp_path / 'pyproject.toml'}: arrays or tables nested too deeply to read" in done.stdout + done.stderr
