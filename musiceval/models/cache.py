"""A resumable, append-only response cache shared by processes (pytest-xdist workers, generate runs).

Layout: ``<dir>/responses.jsonl``, one JSON object per line, and ``<dir>/responses.jsonl.lock``
(a :mod:`filelock` lock). Each line holds one successful answer::

    {"key": "<sha256>", "item_id": .., "condition": .., "chunk": .., "model": .., "revision": ..,
     "settings": {"temperature": .., "max_tokens": .., "seed": ..}, "prompt": .., "audio_hash": ..,
     "text": .., "meta": {..}}

Rules that make it safe to kill and resume:

- the key is the SHA-256 of (model spec, revision, generation settings, prompt, audio content
  hash, condition, chunk); the seed is part of the settings;
- a writer holds the lock, re-reads what other processes appended since it last looked, skips
  keys already present (no duplicates across workers), and appends whole lines with one
  ``write`` followed by ``flush`` and ``fsync``;
- a process killed mid-write leaves at most one torn last line (no trailing newline). Readers
  ignore it and report it in :attr:`ResponseCache.torn` (and a warning); the next writer
  truncates it before appending, so it never glues onto a good line;
- errors are not cached: a failed item is retried by the next run;
- a full disk cuts the failed append back to the last whole line (and removes a claim it could not
  write) and raises :class:`~musiceval.writes.WriteError`: one line naming the file and the fix;
- concurrent runs do not pay twice: before calling the model a run *claims* the keys it is about
  to ask (:meth:`ResponseCache.claim`, one ``claims/<key>`` file created with ``O_EXCL`` holding
  the owner's host, pid and a token); a second run skips the keys another live run holds and
  waits for their answers (:meth:`ResponseCache.wait_for`), asking the model only for keys whose
  claim was released without an answer (the first run's call failed). A claim whose process is
  gone (same host) or older than ``claim_ttl`` seconds is stale and taken over, and so is one that
  names no owner after :data:`CLAIM_WRITE_GRACE` seconds (its run was killed between creating the
  file and writing its name into it);
- API keys never reach the cache: the model spec is stored with URL credentials and
  ``key=``/``token=`` query values redacted, and nothing else from the environment is written.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import time
import uuid
import warnings
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from filelock import FileLock

from musiceval.redact import redact, redact_meta
from musiceval.writes import WriteError, append_whole, cannot_write

__all__ = ["ResponseCache", "cache_key", "redact_spec"]



def redact_spec(spec: str) -> str:
    """Remove credentials a user may have put in a model spec's URL (``user:key@``, ``?key=``):
    :func:`musiceval.redact.redact`, the suite's one redaction function."""
    return redact(spec)


def cache_key(
    *,
    model: str,
    revision: str,
    settings: Mapping[str, Any],
    prompt: str,
    audio_hash: str,
    condition: str,
    chunk: int = 0,
) -> str:
    """The SHA-256 hex key of one request (canonical JSON of its defining fields)."""
    payload = json.dumps(
        {
            "model": redact_spec(model),
            "revision": revision,
            "settings": dict(sorted(settings.items())),
            "prompt": prompt,
            "audio_hash": audio_hash,
            "condition": condition,
            "chunk": int(chunk),
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()  # never fails on odd text


#: the fix a response cache that cannot be written names
CACHE_FIX = "pass --cache-dir DIR (pytest: --musiceval-cache-dir DIR) on a writable disk"

#: seconds after which a claim file that names no owner is stale: a run writes its name into the
#: file right after creating it, so only a run killed in between leaves one empty
CLAIM_WRITE_GRACE = 10.0


class ResponseCache:
    """Append-only JSON-lines cache of responses; safe across processes.

    Parameters
    ----------
    directory : path-like
        Created if missing.
    lock_timeout : float
        Seconds to wait for the file lock before raising ``filelock.Timeout``.
    """

    FILENAME = "responses.jsonl"

    def __init__(self, directory: str | os.PathLike[str], *, lock_timeout: float = 60.0,
                 claim_ttl: float = 3600.0) -> None:
        self.directory = Path(directory)
        self.claim_ttl = float(claim_ttl)
        self._owner = f"{socket.gethostname()} {os.getpid()} {uuid.uuid4().hex}"
        self._claimed: set[str] = set()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / self.FILENAME
        self._lock = FileLock(str(self.path) + ".lock", timeout=lock_timeout)
        self._records: dict[str, dict[str, Any]] = {}
        self._offset = 0
        #: ``(line_number, reason)`` of lines that were ignored (torn or not JSON objects)
        self.torn: list[tuple[int, str]] = []
        #: lines whose key was already present (only possible if the file was edited by hand)
        self.duplicates = 0
        self._line_no = 0
        with self._lock:
            self._refresh()
            tail = self._tail_bytes()
            if tail:
                self._report(self._line_no + 1, f"torn last line ({tail} bytes, no newline) ignored")

    # -- reading ---------------------------------------------------------------------------
    def _report(self, line_no: int, reason: str) -> None:
        self.torn.append((line_no, reason))
        warnings.warn(f"response cache {self.path}: line {line_no}: {reason}", stacklevel=3)

    def _tail_bytes(self) -> int:
        size = self.path.stat().st_size if self.path.exists() else 0
        return size - self._offset

    def _refresh(self) -> None:
        """Parse complete lines appended since the last read; leave an incomplete tail alone."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        end = data.rfind(b"\n")
        if end < 0:
            return
        for raw in data[: end + 1].splitlines():
            self._line_no += 1
            try:
                record = json.loads(raw.decode("utf-8"))
                key = record["key"]
                if not isinstance(key, str) or not isinstance(record.get("text"), str):
                    raise TypeError("'key' and 'text' must be strings")
            except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
                self._report(self._line_no, f"not a cache record ({exc}); ignored")
                continue
            if key in self._records:
                self.duplicates += 1
                continue
            self._records[key] = record
        self._offset += end + 1

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached record for ``key`` (reading new lines from other processes), or None."""
        if key not in self._records:
            self._refresh()
        return self._records.get(key)

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        self._refresh()
        return len(self._records)

    def records(self) -> Iterator[dict[str, Any]]:
        self._refresh()
        return iter(list(self._records.values()))

    # -- writing ---------------------------------------------------------------------------
    def put(self, record: Mapping[str, Any]) -> bool:
        """Append one record (must carry ``key`` and ``text``); False if the key was present."""
        return self.put_many([record]) == 1

    def put_many(self, records: Iterable[Mapping[str, Any]]) -> int:
        """Append records whose keys are new, under one lock; returns how many were written."""
        records = list(records)
        for r in records:
            if not isinstance(r.get("key"), str) or not isinstance(r.get("text"), str):
                raise ValueError("a cache record needs string 'key' and 'text' fields")
        with self._lock:
            self._refresh()
            self._truncate_torn_tail()
            lines, new = [], {}
            for r in records:
                if r["key"] in self._records or r["key"] in new:
                    continue
                clean = dict(r)
                if "model" in clean:
                    clean["model"] = redact_spec(str(clean["model"]))
                if "meta" in clean:
                    clean["meta"] = redact_meta(clean["meta"])
                new[r["key"]] = clean
                line = json.dumps(clean, ensure_ascii=False, separators=(",", ":")) + "\n"
                try:
                    line.encode("utf-8")
                except UnicodeEncodeError:  # a lone surrogate: escaped (valid JSON, read back as written)
                    line = json.dumps(clean, ensure_ascii=True, separators=(",", ":")) + "\n"
                lines.append(line)
            if not lines:
                return 0
            blob = "".join(lines).encode("utf-8")
            self._append(blob)
            self._records.update(new)
            self._offset += len(blob)
            self._line_no += len(lines)
            return len(lines)

    def _append(self, blob: bytes) -> None:
        """Append whole lines, flushed to disk. A write that fails (a full disk) is cut back to the
        last whole line and raises :class:`~musiceval.writes.WriteError` naming the file and the fix."""
        try:
            append_whole(self.path, blob, fsync=True)  # under the lock: no other writer's line is cut
        except OSError as exc:
            raise WriteError(cannot_write(self.path, exc, CACHE_FIX)) from None

    def _truncate_torn_tail(self) -> None:
        # Under the lock no writer is mid-line, so an incomplete tail is a killed writer's.
        if self._tail_bytes() > 0:
            with open(self.path, "r+b") as f:
                f.truncate(self._offset)

    # -- claims: one model call per key across concurrent runs --------------------------------
    def _claim_path(self, key: str) -> Path:
        if not key or any(c not in "0123456789abcdefABCDEF" for c in key):
            raise ValueError(f"cache key {key!r} is not a hex digest")
        return self.directory / "claims" / key

    def _stale(self, path: Path) -> bool:
        try:
            text = path.read_text(encoding="utf-8")
            age = time.time() - path.stat().st_mtime
        except FileNotFoundError:
            return False
        except (OSError, UnicodeDecodeError):
            return True
        if age > self.claim_ttl:
            return True
        host, _, rest = text.partition(" ")
        pid, _, token = rest.partition(" ")
        if not (host and pid.isdigit() and token):  # no owner named: its writer died mid-claim
            return age > CLAIM_WRITE_GRACE
        if host == socket.gethostname():
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                return False
        return False

    def claim(self, keys: Iterable[str]) -> tuple[list[str], list[str]]:
        """Claim the keys not yet cached: ``(mine, held_by_others)``.

        ``mine`` are the keys this run now holds and should ask the model for (then :meth:`put_many`
        and :meth:`release`); ``held_by_others`` are keys a live concurrent run is asking: wait for
        them with :meth:`wait_for` instead of paying twice. Keys already cached are in neither.
        """
        mine, others = [], []
        (self.directory / "claims").mkdir(exist_ok=True)
        for key in dict.fromkeys(keys):
            if key in self._claimed:
                mine.append(key)
                continue
            if self.get(key) is not None:
                continue
            path = self._claim_path(key)
            for _ in range(2):
                try:
                    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                except FileExistsError:
                    if self._stale(path):
                        path.unlink(missing_ok=True)
                        continue
                    others.append(key)
                    break
                try:
                    with os.fdopen(fd, "w", encoding="utf-8") as f:
                        f.write(self._owner)
                except OSError as exc:  # a full disk: no claim is left that names no owner
                    path.unlink(missing_ok=True)
                    raise WriteError(cannot_write(path, exc, CACHE_FIX)) from None
                if self.get(key) is not None:  # answered between our look and our claim
                    path.unlink(missing_ok=True)
                    break
                self._claimed.add(key)
                mine.append(key)
                break
        return mine, others

    def release(self, keys: Iterable[str] | None = None) -> None:
        """Drop this run's claims on ``keys`` (default: all it holds), answered or not."""
        for key in list(self._claimed if keys is None else keys):
            if key not in self._claimed:
                continue
            self._claimed.discard(key)
            path = self._claim_path(key)
            try:
                if path.read_text(encoding="utf-8") == self._owner:
                    path.unlink()
            except (FileNotFoundError, UnicodeDecodeError):
                pass

    def wait_for(self, keys: Iterable[str], *, poll: float = 0.05, timeout: float | None = None) -> dict[str, dict[str, Any]]:
        """Wait until each key is cached or no live run claims it any more; the cached records.

        Keys missing from the result were released unanswered (the other run's call failed) or
        their claim went stale: the caller claims and asks them itself.
        """
        waiting = set(keys)
        found: dict[str, dict[str, Any]] = {}
        deadline = None if timeout is None else time.monotonic() + timeout
        while waiting:
            for key in list(waiting):
                record = self.get(key)
                if record is not None:
                    found[key] = record
                    waiting.discard(key)
                elif not self._claim_path(key).exists() or self._stale(self._claim_path(key)):
                    record = self.get(key)  # put just before the release we saw
                    if record is not None:
                        found[key] = record
                    waiting.discard(key)
            if not waiting or (deadline is not None and time.monotonic() > deadline):
                break
            time.sleep(poll)
        return found
