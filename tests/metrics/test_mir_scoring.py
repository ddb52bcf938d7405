"""`musiceval score mir` end to end on fixture files (the CLI JSON contract)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "mir" / "outputs"


def _run(*args):
    proc = subprocess.run([sys.executable, "-m", "musiceval.cli", "score", "mir", "--format", "cmi-bench", *map(str, args), "--json"],
                          capture_output=True, text=True, timeout=120)
    return proc


@pytest.mark.parametrize("compat", [[], ["--compat", "cmi-bench"]])
def test_cli_json_contract(compat):
    proc = _run(FIX / "mullama" / "mullama_GTZAN.jsonl", *compat)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["protocol"] == "mir" and out["task"] == "GTZAN" and out["n"] == 200
    assert set(out["metrics"]) == {"accuracy"} and isinstance(out["n_failed"], int)


def test_cli_task_flag_and_beat_keys(tmp_path):
    target = tmp_path / "renamed.jsonl"
    target.write_bytes((FIX / "ltu" / "ltu_gtzan_beat.jsonl").read_bytes())
    proc = _run(target, "--task", "gtzan_beat")
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)["metrics"]) == {"f_measure", "cmlt", "amlt"}


def test_cli_refuses_valence_copy_by_default():
    proc = _run(FIX / "ltu" / "ltu_EMO_valence.jsonl")
    assert proc.returncode == 2 and "AROUSAL" in proc.stderr
    proc = _run(FIX / "ltu" / "ltu_EMO_valence.jsonl", "--compat", "cmi-bench")
    assert proc.returncode == 0 and "r2" in json.loads(proc.stdout)["metrics"]


def test_bge_prefix_loads_cls_pooling_encoder_and_query_instruction_rule(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import numpy as np

    import musiceval.encoders.bge  # noqa: F401
    from musiceval.encoders import load_text_encoder
    from musiceval.encoders.sentence import bundled_minilm_path
    from musiceval.protocols.mir.engine import query_prefix_for

    enc = load_text_encoder("bge:" + bundled_minilm_path())  # any BERT-style directory loads
    rows = enc.encode(["rock", "a calm piano piece"])
    assert enc.id.startswith("clspool:") and np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert query_prefix_for("bge:BAAI/bge-large-en-v1.5", None).startswith("Represent this sentence")
    assert query_prefix_for("bge:BAAI/bge-large-en-v1.5", "cmi-bench") == ""  # encode() ignores it upstream
    assert query_prefix_for("minilm", None) == ""
