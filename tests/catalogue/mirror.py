"""A local mirror of the catalogue's sources in their real on-disk layouts, for tests.

- :func:`hub_dataset` writes a Hugging Face dataset into a hub cache exactly as ``huggingface_hub``
  lays it out (``datasets--<org>--<name>/blobs/<sha256>``, ``snapshots/<commit>/<path>`` linking
  to the blob, ``refs/main`` holding the commit), so ``snapshot_download`` finds it with
  ``HF_HUB_OFFLINE=1`` through the library's own lookup;
- :func:`url_file` puts a release file under ``$MUSICEVAL_URL_MIRROR/<host>/<path>``
  (``musiceval.catalogue.fetch.mirrored``), fetched through ``urllib`` as ``file://``;
- :func:`tone` / :func:`tone_bytes` synthesise short clips (numpy sine tones).
"""
from __future__ import annotations

import hashlib
import io
import os
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
