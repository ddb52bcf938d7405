"""``musiceval generate`` with an hf: model on one CUDA GPU, through the real CLI (``gpu``-marked:
skipped with the reason where no GPU is visible, failed under ``--strict``).

- Two shards answered at the same time on one GPU and joined with ``musiceval merge`` hold exactly
  the unsharded run's answers (batch size 1 in every run, so each request meets the same kernels).
- A run killed mid-way on the GPU resumes from the response cache: what was answered is not asked
  again, nothing is duplicated, a line torn by the kill is ignored and named.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from musiceval.models.qwen2audio import build_tiny_checkpoint  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "musiceval" / "evals" / "audio" / "manifest.jsonl"
pytestmark = [pytest.mark.gpu, pytest.mark.slow]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-qwen2-audio"))


def _generate(tiny_dir: Path, cache_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "musiceval", "generate", "--model", f"hf:{tiny_dir}", "--dataset", str(MANIFEST),
            "--conditions", "correct,noise", "--cache-dir", str(cache_dir), "--device", "cuda", "--no-progress", *extra]


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}


def _texts(responses_dir: Path) -> dict[str, str]:
    rows = [json.loads(line) for line in (responses_dir / "responses.jsonl").read_text().splitlines()]
    return {r["key"]: r["text"] for r in rows}


def test_two_shards_on_one_gpu_merge_to_the_unsharded_answers(tiny_dir, tmp_path):
    one = ["--batch-size", "1", "--max-tokens", "8", "--model-args", "dtype=float32"]
    whole = subprocess.run(_generate(tiny_dir, tmp_path / "whole", *one), env=_env(), capture_output=True, text=True, timeout=600)
    assert whole.returncode == 0, whole.stderr[-3000:]
    shards = [subprocess.Popen(_generate(tiny_dir, tmp_path / f"s{i}", *one, "--shard", f"{i}/2"), env=_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = [p.communicate(timeout=600) for p in shards]
    assert [p.returncode for p in shards] == [0, 0], [err[-3000:] for _, err in outs]
    sizes = [json.loads(out.strip().splitlines()[-1])["n_generated"] for out, _ in outs]
    assert all(sizes) and sum(sizes) == 30  # 15 items x 2 conditions, each in one shard
    merged = subprocess.run([sys.executable, "-m", "musiceval", "merge", str(tmp_path / "s0" / "responses"),
                             str(tmp_path / "s1" / "responses"), "--out", str(tmp_path / "merged")],
                            env=_env(), capture_output=True, text=True, timeout=120)
    assert merged.returncode == 0, merged.stderr
    assert _texts(tmp_path / "merged") == _texts(tmp_path / "whole" / "responses")


def test_a_run_killed_mid_way_on_the_gpu_resumes_without_duplicates_or_torn_lines(tiny_dir, tmp_path):
    cmd = _generate(tiny_dir, tmp_path / "cache", "--batch-size", "2", "--max-tokens", "256")
    path = tmp_path / "cache" / "responses" / "responses.jsonl"
    log = tmp_path / "first.log"
    with open(log, "wb") as err:
        run = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 300
        while run.poll() is None and time.monotonic() < deadline and (not path.exists() or len(path.read_bytes().splitlines()) < 4):
            time.sleep(0.01)
        assert run.poll() is None, f"the run ended before it could be killed:\n{log.read_text()[-3000:]}"
        run.send_signal(signal.SIGKILL)
    run.wait(timeout=30)
    n_before = len(path.read_bytes().splitlines())
    assert 4 <= n_before < 30, n_before
    with open(path, "ab") as f:  # the worst case: a line torn by the kill
        f.write(b'{"key": "deadbeef", "text": "tor')
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["n_cached"] == n_before and summary["n_generated"] == 30 - n_before
    assert summary["cache_lines_ignored"] == 1 and "torn last line" in done.stderr
    keys = [json.loads(line)["key"] for line in path.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 30
