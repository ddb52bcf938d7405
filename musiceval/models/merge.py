"""``musiceval merge CACHE_DIR... --out DIR``: join response caches written by sharded runs.

Each ``musiceval generate --shard i/n --cache-dir DIR_i`` run (one machine, one Slurm array task,
one Kubernetes pod) fills its own cache, ``DIR_i/responses``; merging them gives the cache an
unsharded run would have written, which ``pytest evals/ --musiceval-model MODEL_SPEC --musiceval-cache-dir
.musiceval/cache`` then replays::

    musiceval merge shard0/responses shard1/responses ... --out .musiceval/cache/responses

Rules: records are keyed by the cache key (model, revision, settings, prompt, audio hash,
condition, chunk); a key met twice with the same text is written once (``duplicates``); a key met
twice with different texts is a **conflict**: the first source's answer is kept (sources in
the order given), each conflict is reported on stderr with both texts, and the exit status is 1.
The output directory may already hold a cache (its records come first and win); merging is
idempotent. Torn or malformed lines of a source are skipped and counted.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from musiceval.models.cache import ResponseCache

__all__ = ["MergeResult", "merge_caches"]


@dataclass
class MergeResult:
    n_sources: int = 0
    n_written: int = 0
    n_duplicates: int = 0
    n_ignored_lines: int = 0
    #: ``{"key", "item_id", "condition", "chunk", "kept", "other", "kept_from", "other_from"}``
    conflicts: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {"n_sources": self.n_sources, "n_written": self.n_written, "n_duplicates": self.n_duplicates,
                "n_conflicts": len(self.conflicts), "n_ignored_lines": self.n_ignored_lines}


def _cache_dir(path: Path) -> Path:
    """A cache directory, or the folder of a ``responses.jsonl`` given directly."""
    if path.is_file() and path.name == ResponseCache.FILENAME:
        return path.parent
    if not (path / ResponseCache.FILENAME).is_file():
        raise FileNotFoundError(f"{path}: no {ResponseCache.FILENAME} here; pass the responses/ folder of a "
                                "`musiceval generate --cache-dir DIR` run (DIR/responses)")
    return path


def merge_caches(sources: Sequence[str | Path], out: str | Path) -> MergeResult:
    """Append every record of ``sources`` whose key ``out`` lacks; report conflicting answers.

    Raises
    ------
    FileNotFoundError
        If a source holds no ``responses.jsonl``.
    ValueError
        If a source is the output directory itself.
    """
    result = MergeResult()
    dirs = [_cache_dir(Path(s)) for s in sources]
    out = Path(out)
    for d in dirs:
        if out.exists() and d.resolve() == out.resolve():
            raise ValueError(f"{d}: a source cannot be the --out directory; merge into a new directory")
    target = ResponseCache(out)
    seen: dict[str, tuple[str, str]] = {r["key"]: (r["text"], str(out)) for r in target.records()}
    for d in dirs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # counted below instead
            source = ResponseCache(d)
        result.n_sources += 1
        result.n_ignored_lines += len(source.torn) + source.duplicates
        fresh = []
        for record in source.records():
            key = record["key"]
            if key in seen:
                kept, kept_from = seen[key]
                if kept == record["text"]:
                    result.n_duplicates += 1
                else:
                    result.conflicts.append({"key": key, "item_id": record.get("item_id"),
                                             "condition": record.get("condition"), "chunk": record.get("chunk"),
                                             "kept": kept, "other": record["text"],
                                             "kept_from": kept_from, "other_from": str(d)})
                continue
            seen[key] = (record["text"], str(d))
            fresh.append(record)
        result.n_written += target.put_many(fresh)
    return result
