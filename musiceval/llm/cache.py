"""A content-addressed JSON cache for the suite's LLM results, safe across pytest-xdist workers.

The key is the SHA-256 of ``(model, prompt version, vocabulary hash, answer)``: change any of
them and the entry is a different one, so a stale result is never served. Each entry is one file
``<dir>/<key[:2]>/<key>.json`` written atomically under a file lock.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from filelock import FileLock


def cache_key(*, model: str, prompt_version: str, vocabulary_hash: str, answer: str) -> str:
    payload = json.dumps([model, prompt_version, vocabulary_hash, answer], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class JSONCache:
    """``get(key)`` / ``put(key, value)`` of JSON values in a directory."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(self.directory / ".lock"))

    def _path(self, key: str) -> Path:
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"cache key must be a sha256 hex digest, got {key[:80]!r}")
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        path = self._path(key)
        try:
            return json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None  # a torn or corrupt entry is a miss; it is rewritten on the next put

    def put(self, key: str, value: Any) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(value, ensure_ascii=False, sort_keys=True), "utf-8")
            os.replace(tmp, path)

    def __len__(self) -> int:
        return sum(1 for _ in self.directory.glob("*/*.json"))
