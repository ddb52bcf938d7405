"""``musiceval data check NAME``: re-verify prepared data against its lock file.

Every question file and every clip the manifest uses is hashed again. Each problem is one line
naming the file and the fix: a changed question file (another version of the benchmark), a clip
that is gone, or one whose bytes changed (a corrupt copy or another recording).
"""
from __future__ import annotations

from pathlib import Path

from musiceval.catalogue.digests import file_sha256
from musiceval.catalogue.lock import LOCK_NAME, MANIFEST_NAME, read_lock
from musiceval.catalogue.spec import Benchmark


def check(benchmark: Benchmark, directory: Path, *, files: dict[str, Path] | None = None, progress: bool = False) -> list[str]:
    """Problem lines (empty: the prepared data is what the lock says). ``files`` maps question-file
    names to their current copies (default: the ones fetched; see :func:`question_file_paths`)."""
    lock = read_lock(directory / LOCK_NAME)
    name = benchmark.name
    problems: list[str] = []
    current = files if files is not None else question_file_paths(benchmark, directory, lock)
    for qname, digest in lock.question_files.items():
        path = current.get(qname)
        if path is None or not path.is_file():
            problems.append(f"{name}: question file {qname} is gone; run `musiceval data prepare {name}` to fetch it again")
        elif file_sha256(path) != digest:
            problems.append(f"{name}: question file {qname} changed (sha256 {file_sha256(path)[:12]} != {digest[:12]} in the "
                            f"lock): another version of the benchmark; run `musiceval data prepare {name}` to accept it "
                            "(runs on the two versions will not compare)")
    manifest = directory / MANIFEST_NAME
    if not manifest.is_file() or file_sha256(manifest) != lock.manifest_sha256:
        problems.append(f"{name}: {manifest} is missing or was edited; run `musiceval data prepare {name}` to write it again")
    for _, path, got in changed_clips(lock, progress=progress, desc=f"check {name}"):
        if got is None:
            problems.append(f"{name}: clip {path} is missing; restore it, or run `musiceval data prepare {name}` to count it as missing")
        else:
            problems.append(f"{name}: clip {path} changed since it was checked (sha256 differs); restore the original, or "
                            f"run `musiceval data prepare {name}` to check it again")
    return problems


def changed_clips(lock, *, progress: bool = False, desc: str = "check audio") -> list[tuple[str, Path, str | None]]:
    """``(clip as the lock names it, path, sha256 now or None when it is gone)`` of every clip the manifest uses whose bytes are
    not the ones the lock recorded: each clip is read and hashed again."""
    root = Path(lock.audio_root)
    clips = sorted(set(lock.item_clips.values()))
    iterator = clips
    if progress:
        from tqdm import tqdm

        iterator = tqdm(clips, unit="clip", desc=desc, leave=False)
    out: list[tuple[str, Path, str | None]] = []
    for rel in iterator:
        path = root / rel
        if not path.is_file():
            out.append((rel, path, None))
            continue
        got = file_sha256(path)
        if got != str((lock.clips.get(rel) or {}).get("sha256", "")):
            out.append((rel, path, got))
    return out


def question_file_paths(benchmark: Benchmark, directory: Path, lock) -> dict[str, Path]:
    """Where the question files of a prepared benchmark are now: the user's ``--questions`` copy, the
    hub cache at the resolved revision (offline lookup), or ``<prepared>/downloads``."""
    source = lock.source
    if source.get("questions_from"):
        given = Path(source["questions_from"])
        if given.is_dir():  # the folder of an entry that reads several files
            return {qname: given / qname for qname in lock.question_files}
        return {benchmark.question_files[0]: given}
    out: dict[str, Path] = {}
    if source.get("kind") == "hub":
        from huggingface_hub import try_to_load_from_cache

        for qname in lock.question_files:
            found = try_to_load_from_cache(source["id"], qname, revision=source.get("resolved_revision") or source.get("revision"),
                                           repo_type="dataset")
            if isinstance(found, str):
                out[qname] = Path(found)
    for qname in lock.question_files:
        for candidate in (directory / "downloads" / qname, directory / "unpacked" / qname):
            if qname not in out and candidate.is_file():
                out[qname] = candidate
    return out
