"""The lock file next to prepared data: what was fetched, at which revision, and every clip's hash.

``<prepared>/musiceval.lock.json`` (JSON, written atomically) holds the benchmark name, its source
(id, pinned and resolved revision, or why it is unpinned), the sha256 of every question file, the
audio root, the published and prepared item counts, one record per clip (sha256, size, duration,
sample rate, channels, peak; or the reason it is unusable), the items without a usable clip (missing, or corrupt with the
reason) and the sha256 of the manifest it wrote. ``musiceval data check`` re-verifies against it,
and the run's provenance records its dataset part (:func:`dataset_fingerprint`).

While clips are being checked the same record is saved every few hundred clips as
``musiceval.lock.json.partial``; a rerun reuses the clips whose size and mtime did not change, so
an interrupted prepare resumes.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LOCK_NAME = "musiceval.lock.json"
MANIFEST_NAME = "manifest.jsonl"
#: bumped when the lock's layout changes (an older lock is prepared again)
LOCK_VERSION = 1


class LockError(ValueError):
    """A lock file that is missing or unreadable (the message names it and the fix)."""


@dataclass
class Lock:
    benchmark: str
    source: dict[str, Any]
    question_files: dict[str, str]
    audio_root: str
    items: int
    questions: int = 0
    clips: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: question id -> clip path relative to the audio root (items with a usable clip)
    item_clips: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    corrupt: dict[str, str] = field(default_factory=dict)
    manifest_sha256: str = ""
    version: int = LOCK_VERSION

    @property
    def with_audio(self) -> int:
        return len(self.item_clips)

    def as_dict(self) -> dict[str, Any]:
        return {"version": self.version, "benchmark": self.benchmark, "source": self.source,
                "question_files": self.question_files, "audio_root": self.audio_root, "items": self.items,
                "questions": self.questions, "with_audio": self.with_audio, "missing": self.missing,
                "corrupt": self.corrupt, "manifest_sha256": self.manifest_sha256, "item_clips": self.item_clips,
                "clips": self.clips}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Lock":
        return cls(benchmark=d["benchmark"], source=dict(d["source"]), question_files=dict(d["question_files"]),
                   audio_root=str(d["audio_root"]), items=int(d["items"]), questions=int(d.get("questions", 0)),
                   clips=dict(d.get("clips", {})), item_clips=dict(d.get("item_clips", {})),
                   missing=dict(d.get("missing", {})), corrupt=dict(d.get("corrupt", {})),
                   manifest_sha256=str(d.get("manifest_sha256", "")), version=int(d.get("version", 0)))


def write_lock(lock: Lock, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(lock.as_dict(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _map_of(kind: type) -> Any:
    return lambda v: isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, kind) for k, x in v.items())


#: each field of a lock file: (required, what it must be, the check)
_FIELDS: dict[str, tuple[bool, str, Any]] = {
    "benchmark": (True, "a string", lambda v: isinstance(v, str)),
    "source": (True, "an object", lambda v: isinstance(v, dict)),
    "question_files": (True, "an object of file name -> sha256", _map_of(str)),
    "audio_root": (True, "a string", lambda v: isinstance(v, str)),
    "items": (True, "an integer", _is_int),
    "questions": (False, "an integer", _is_int),
    "clips": (False, "an object of clip -> record", _map_of(dict)),
    "item_clips": (False, "an object of item id -> clip", _map_of(str)),
    "missing": (False, "an object of item id -> reason", _map_of(str)),
    "corrupt": (False, "an object of item id -> reason", _map_of(str)),
    "manifest_sha256": (False, "a string", lambda v: isinstance(v, str)),
    "version": (False, "an integer", _is_int),
}


def field_problem(data: Any) -> str | None:
    """What is wrong with a parsed lock file, naming the field (None: it reads as a lock)."""
    if not isinstance(data, dict):
        return f"not a JSON object (got {type(data).__name__})"
    for name, (required, what, fits) in _FIELDS.items():
        if name not in data:
            if required:
                return f"field {name!r} is missing"
        elif not fits(data[name]):
            return f"field {name!r} must be {what}, got {type(data[name]).__name__}"
    return None


def read_lock(path: Path) -> Lock:
    """The lock file at ``path``; :class:`LockError` naming the file, the field and the fix."""
    again = f"delete it and run `musiceval data prepare {path.parent.name}` again"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LockError(f"{path}: no lock file; run `musiceval data prepare {path.parent.name}` first") from None
    except RecursionError:  # json parses nested arrays recursively
        raise LockError(f"{path}: nested too deeply to be a lock file; {again}") from None
    except (OSError, ValueError) as exc:
        raise LockError(f"{path}: unreadable lock file ({exc}); {again}") from None
    problem = field_problem(data)
    if problem is not None:
        raise LockError(f"{path}: {problem}; {again}")
    return Lock.from_dict(data)


def dataset_fingerprint(lock: Lock) -> dict[str, Any]:
    """The dataset part of a run's provenance: id, revision, question-file and audio hashes.

    ``audio_sha256`` hashes the sorted ``(clip, sha256)`` pairs of the clips used, so two runs on
    the same questions with other audio do not compare."""
    import hashlib

    audio = hashlib.sha256("\n".join(f"{k}\t{lock.clips[k].get('sha256', '')}" for k in sorted(set(lock.item_clips.values()))
                                     if k in lock.clips).encode()).hexdigest()
    return {"id": lock.source.get("id", ""), "revision": lock.source.get("resolved_revision") or lock.source.get("revision") or "",
            "questions_sha256": dict(sorted(lock.question_files.items())), "audio_sha256": audio,
            "items_with_audio": lock.with_audio, "items": lock.items}
