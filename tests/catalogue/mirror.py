"""A local mirror of the catalogue's sources in their real on-disk layouts, for tests.

- :func:`hub_dataset` writes a Hugging Face dataset into a hub cache exactly as ``huggingface_hub``
  lays it out (``datasets--<org>--<name>/blobs/<sha256>``, ``snapshots/<commit>/<path>`` linking
  to the blob, ``refs/main`` holding the commit), so ``snapshot_download`` finds it with
  ``HF_HUB_OFFLINE=1`` through the library's own lookup;
- :func:`url_file` puts a release file under ``$MUSICEVAL_URL_MIRROR/<host>/<path>``
  (``musiceval.catalogue.fetch.mirrored``), fetched through ``urllib`` as ``file://``;
- :func:`tone` / :func:`tone_bytes` synthesise short clips (numpy sine tones);
- :func:`musiceval_cli` runs a ``musiceval`` command of this checkout as a user does, and
  :func:`tiny_run` is ``musiceval run`` of one entry on the tiny checkpoint, read from a mirror offline.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import urllib.parse
from pathlib import Path

import numpy as np
import soundfile as sf


def tone(path: Path, freq: float = 440.0, seconds: float = 1.0, rate: int = 16_000, fmt: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * rate)) / rate
    sf.write(str(path), (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32), rate, format=fmt)
    return path


def tone_bytes(freq: float = 440.0, seconds: float = 1.0, rate: int = 16_000, fmt: str = "WAV") -> bytes:
    buf = io.BytesIO()
    t = np.arange(int(seconds * rate)) / rate
    sf.write(buf, (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32), rate, format=fmt)
    return buf.getvalue()


def hub_dataset(cache: Path, repo_id: str, files: dict[str, bytes], commit: str | None = None) -> str:
    """Write ``files`` as the snapshot ``commit`` (default: derived from the content) of the dataset
    ``repo_id`` in the hub cache ``cache``; ``refs/main`` points at it. Returns the commit."""
    commit = commit or hashlib.sha1(repr(sorted(files.items())).encode()).hexdigest()
    repo = cache / f"datasets--{repo_id.replace('/', '--')}"
    for rel, data in files.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = repo / "snapshots" / commit / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.exists() or link.is_symlink():
            link.unlink()
        os.symlink(os.path.relpath(blob, link.parent), link)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return commit


def url_file(mirror: Path, url: str, data: bytes) -> Path:
    parts = urllib.parse.urlparse(url)
    path = mirror / parts.netloc / parts.path.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


ROOT = Path(__file__).resolve().parents[2]


def musiceval_cli(*args: str, env: dict | None = None, cwd: Path | None = None,
                  timeout: int = 900) -> subprocess.CompletedProcess:
    """``python -m musiceval.cli ARGS`` in a subprocess on this checkout (one thread per library)."""
    return subprocess.run([sys.executable, "-m", "musiceval.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **(env or {})},
                          cwd=cwd, timeout=timeout)


def offline(mirror: dict) -> dict:
    """The environment that reads the hub from ``mirror`` with the network off."""
    return {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(mirror["hub"])}


def tiny_run(name: str, checkpoint: Path, mirror: dict, tmp_path: Path, *options: str) -> list[str]:
    """The arguments of ``musiceval run`` of catalogue entry ``name`` on the tiny checkpoint (4 new
    tokens, CPU), prepared from ``mirror``, into ``tmp_path/run`` with its cache in ``tmp_path/cache``."""
    return ["run", "--model", f"hf:{checkpoint}", "--benchmarks", name, "--out", str(tmp_path / "run"),
            "--model-args", "max_new_tokens=4,device=cpu,num_threads=1", "--data-root", str(mirror["data"]),
            "--cache-dir", str(tmp_path / "cache"), "--no-progress", *options]


def finished_run(done: subprocess.CompletedProcess, out: Path) -> dict:
    """``results.json`` of a finished ``musiceval run --out OUT``, checked for what every run must show:
    the results written, the exit code and the last line of the terminal saying the verdict, no traceback."""
    results = json.loads((out / "results" / "results.json").read_text("utf-8")) if (out / "results").is_dir() else {}
    assert results, done.stdout[-3000:] + done.stderr[-3000:]
    assert results["verdict"] in ("PASSED", "FAILED", "INCONCLUSIVE", "ERROR")
    assert done.returncode == (0 if results["verdict"] == "PASSED" else 1)
    assert results["verdict"] in done.stdout.strip().splitlines()[-1]
    assert "Traceback" not in done.stderr
    return results


def tiny_run_of_own_files(name: str, checkpoint: Path, mirror: dict, tmp_path: Path, questions: Path,
                          audio: Path) -> tuple[dict, subprocess.CompletedProcess]:
    """An entry built from the user's own files, taken as the user takes it: ``musiceval data prepare
    NAME --questions Q --audio-dir A``, then ``musiceval run`` on the tiny checkpoint; ``(results, run)``,
    checked by :func:`finished_run` and for what such an entry records (the files' sha256, no upstream
    revision, "unpinned" in the verdict line)."""
    prepared = musiceval_cli("data", "prepare", name, "--data-root", str(mirror["data"]), "--questions", str(questions),
                             "--audio-dir", str(audio), "--no-progress", env=offline(mirror))
    assert prepared.returncode == 0, prepared.stdout[-2000:] + prepared.stderr[-2000:]
    done = musiceval_cli(*tiny_run(name, checkpoint, mirror, tmp_path),
                         env={**offline(mirror), "MUSICEVAL_CACHE": str(tmp_path / "cache"), "CI": ""})
    results = finished_run(done, tmp_path / "run")
    used = results["meta"]["provenance"]["scorer"]["datasets"][name]
    assert used["questions_sha256"] and not used["revision"]
    assert f"unpinned: {name.split('/', 1)[1]}" in done.stdout.strip().splitlines()[-1]
    return results, done
