"""``musiceval data prepare NAME``: fetch a benchmark, check every clip once, write the manifest
and the lock file.

Steps (each resumable): say how much will be downloaded; fetch the source at its revision
(:mod:`musiceval.catalogue.fetch`); unpack shipped audio; read the questions with the entry's
``questions`` function; find each question's clip under the audio root (the shipped audio, or
``--audio-dir`` for a benchmark that ships none); decode every clip once
(:func:`~musiceval.catalogue.clips.inspect_clip`); write ``manifest.jsonl`` (the items with a usable
clip, in the layout ``musiceval generate`` reads) and ``musiceval.lock.json``.

Missing and corrupt clips are listed and counted, never fatal: the coverage gate (items with
audio / items in the benchmark) decides what they cost. :func:`ensure_prepared` reuses a prepared
benchmark whose lock and manifest are intact (``musiceval data check`` re-hashes everything).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from musiceval.catalogue.clips import ClipError, inspect_clip
from musiceval.catalogue.digests import file_sha256
from musiceval.catalogue.fetch import DATA_ROOT_FIX, DamagedArchive, FetchError, download_size, fetch, human_bytes
from musiceval.catalogue.lock import LOCK_NAME, LOCK_VERSION, MANIFEST_NAME, Lock, LockError, read_lock, write_lock
from musiceval.catalogue.spec import AudioIndex, Benchmark, Question, get_benchmark
from musiceval.writes import WriteError, cannot_write, remove_quietly, write_whole

#: clips checked between two saves of the partial lock
SAVE_EVERY = 200


class PrepareError(ValueError):
    """A benchmark that cannot be prepared as asked (the message names the input and the fix)."""


def data_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Where prepared benchmarks live: ``explicit``, else ``$MUSICEVAL_DATA``, else ``.musiceval/data``."""
    return Path(explicit or os.environ.get("MUSICEVAL_DATA") or ".musiceval/data")


def prepared_dir(root: Path, benchmark: Benchmark) -> Path:
    return Path(root) / (benchmark.prepared_as or benchmark.name)


def _prepared_entry(benchmark: Benchmark) -> Benchmark:
    """The entry that prepares ``benchmark``'s folder: the one it is ``prepared_as``, else itself."""
    return get_benchmark(benchmark.prepared_as) if benchmark.prepared_as else benchmark


@dataclass
class PrepareReport:
    benchmark: Benchmark
    directory: Path
    lock: Lock
    warnings: list[str] = field(default_factory=list)
    reused: bool = False

    @property
    def manifest(self) -> Path:
        return self.directory / MANIFEST_NAME

    @property
    def audio_root(self) -> Path:
        return Path(self.lock.audio_root)

    def summary(self) -> str:
        lock = self.lock
        return (f"{self.benchmark.name}: {lock.with_audio:,} of {lock.items:,} items with audio "
                f"({len(lock.missing):,} missing, {len(lock.corrupt):,} corrupt; {lock.questions:,} questions in the file)")

    def problem_lines(self, limit: int = 20) -> list[str]:
        rows = [f"missing {k}: {v}" for k, v in self.lock.missing.items()] + \
               [f"corrupt {k}: {v}" for k, v in self.lock.corrupt.items()]
        more = [f"... and {len(rows) - limit} more (all listed in {self.directory / LOCK_NAME})"] if len(rows) > limit else []
        return rows[:limit] + more


def _question_files(benchmark: Benchmark, files: dict[str, Path]) -> dict[str, str]:
    import fnmatch

    out = {}
    for pattern in benchmark.question_files:
        found = [name for name in files if fnmatch.fnmatchcase(name, pattern)]
        if not found:
            raise PrepareError(f"{benchmark.name}: question file {pattern!r} is not among the fetched files "
                               f"({', '.join(sorted(files)) or 'none'}); the source's layout changed, or pass --questions FILE")
        out.update({name: file_sha256(files[name]) for name in found})
    for name, digest in out.items():
        pinned = benchmark.digests.get(name)
        if pinned and digest != pinned:
            raise PrepareError(f"{benchmark.name}: question file {name} has sha256 {digest[:12]}, not {pinned[:12]} as at "
                               f"revision {benchmark.source.revision or benchmark.version}; the file changed: fetch it "
                               "again, or pass --questions with the original")
    return out


def _audio_root(benchmark: Benchmark, directory: Path, audio_dir: Path | None) -> Path:
    if audio_dir is not None:
        if not audio_dir.is_dir():
            raise PrepareError(f"--audio-dir {audio_dir}: no such directory; pass the folder holding the clips")
        return audio_dir.resolve()
    if benchmark.ships_audio:
        return (directory / "audio").resolve()
    raise PrepareError(f"{benchmark.name} ships no audio ({benchmark.audio}); pass --audio-dir DIR")


def _previous_clips(directory: Path) -> dict[str, dict]:
    for name in (LOCK_NAME + ".partial", LOCK_NAME):
        try:
            lock = read_lock(directory / name)
        except LockError:
            continue
        if lock.version == LOCK_VERSION:
            return lock.clips
    return {}


def manifest_row(q: Question, clip: str, benchmark: Benchmark) -> dict:
    """One line of ``manifest.jsonl`` (:mod:`musiceval.data.manifest`'s fields)."""
    row = {"id": q.id, "question": q.prompt, "audio": clip, "group": q.group or q.id,
           "meta": {**dict(q.meta), "benchmark": benchmark.name, "raw_question": q.question or q.prompt}}
    if q.choices:
        row["choices"], row["answer"] = list(q.choices), q.answer
    if q.reference is not None:
        row["reference"] = q.reference if isinstance(q.reference, str) else list(q.reference)
    if q.labels:
        row["labels"] = list(q.labels)
    for key in ("audio_start", "audio_end"):
        if getattr(q, key) is not None:
            row[key] = getattr(q, key)
    return row


def prepare(benchmark: Benchmark, root: Path, *, audio_dir: Path | None = None, questions: Path | None = None,
            progress: bool = True, log: Callable[[str], None] = print) -> PrepareReport:
    """Fetch, check and write ``benchmark`` under ``root/<name>`` (see the module docstring); an
    entry ``prepared_as`` another prepares that one."""
    benchmark = _prepared_entry(benchmark)
    directory = prepared_dir(root, benchmark)
    directory.mkdir(parents=True, exist_ok=True)
    warnings: list[str] = []
    source = benchmark.source
    if questions is None and source.kind != "local":
        size, how = download_size(source)
        log(f"{benchmark.name}: fetching {source.describe()}: {human_bytes(size)} ({how}) into "
            f"{'the Hugging Face cache' if source.kind == 'hub' else directory / 'downloads'}")
    if source.revision is None and not source.pin and source.kind != "local":
        warnings.append(f"{benchmark.name}: unpinned source ({source.unpinned}); the lock records the revision fetched")
    files, resolved = fetch(benchmark, directory, questions=questions, progress=progress, log=log)
    if benchmark.unpack is not None:
        try:
            files = benchmark.unpack(files, directory, progress)
        except DamagedArchive as damaged:
            raise PrepareError(discard_damaged(damaged, benchmark)) from None
    hashes = _question_files(benchmark, files)
    try:
        items = benchmark.questions(files)
    except (ValueError, KeyError, TypeError) as exc:
        raise PrepareError(f"{benchmark.name}: the question file does not read as this benchmark ({exc}); "
                           "check that it is the file the catalogue names") from None
    expected = benchmark.items if benchmark.items is not None else len(items)
    if len(items) != expected:
        warnings.append(f"{benchmark.name}: the question file holds {len(items):,} items, the catalogue "
                        f"{expected:,} (another revision, or a partial copy); coverage counts against {expected:,}")
    audio_root = _audio_root(benchmark, directory, audio_dir)
    lock = Lock(benchmark=benchmark.name,
                source={"kind": source.kind, "id": source.id, "revision": source.revision, "resolved_revision": resolved,
                        "unpinned": source.unpinned, "questions_from": str(questions) if questions else ""},
                question_files=hashes, audio_root=str(audio_root), items=expected, questions=len(items))
    _check_clips(benchmark, items, AudioIndex(audio_root), lock, directory, progress)
    manifest = directory / MANIFEST_NAME

    def manifest_lines(fh) -> None:
        for q in items:
            if q.id in lock.item_clips:
                row = json.dumps(manifest_row(q, lock.item_clips[q.id], benchmark), ensure_ascii=False) + "\n"
                fh.write(row.encode("utf-8"))

    write_whole(manifest, manifest_lines, fix=DATA_ROOT_FIX)  # only a complete manifest gets its name
    lock.manifest_sha256 = file_sha256(manifest)
    _save_lock(lock, directory / LOCK_NAME)
    (directory / (LOCK_NAME + ".partial")).unlink(missing_ok=True)
    return PrepareReport(benchmark, directory, lock, warnings)


def discard_damaged(damaged: DamagedArchive, benchmark: Benchmark) -> str:
    """Delete an archive that cannot be read to its end (a download cut short, a corrupt file): from
    ``<prepared>/downloads``, or a Hugging Face cache snapshot file with its blob, so that the next
    prepare downloads it again. Returns the one line naming the file and that command."""
    archive, again = damaged.archive, f"`musiceval data prepare {benchmark.name}`"
    from_hub = archive.is_symlink()  # a hub snapshot file links to its blob: both go, or the hub is not asked again
    if from_hub:
        remove_quietly(archive.resolve())
    remove_quietly(archive)
    if archive.exists() or archive.is_symlink():
        return f"{archive}: a damaged or partial archive ({damaged.detail}); delete it, then run {again} to download it again"
    where = " from the Hugging Face cache" if from_hub else ""
    return f"{archive}: a damaged or partial archive ({damaged.detail}); deleted{where}: run {again} to download it again"


def _save_lock(lock: Lock, path: Path) -> None:
    """:func:`write_lock`; a full disk is one line naming the lock file (no ``.tmp`` is left)."""
    try:
        write_lock(lock, path)
    except OSError as exc:
        remove_quietly(path.with_name(path.name + ".tmp"))
        raise WriteError(cannot_write(path, exc, DATA_ROOT_FIX)) from None


def _check_clips(benchmark: Benchmark, items: list[Question], index: AudioIndex, lock: Lock, directory: Path,
                 progress: bool) -> None:
    previous = _previous_clips(directory)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(items), unit="clip", desc=f"check {benchmark.name} audio", leave=False)
    fresh = 0
    for q in items:
        if bar is not None:
            bar.update(1)
        rel = benchmark.locate_audio(q, index) if q.audio_key is not None else None
        if rel is None:
            lock.missing[q.id] = (q.meta.get("unusable") or (f"no clip for {q.audio_key!r} under {index.root}"
                                  if q.audio_key is not None else "the question names no audio"))
            continue
        if rel not in lock.clips:
            path = index.by_relpath[rel]
            old = previous.get(rel)
            st = path.stat()
            if old and old.get("bytes") == st.st_size and old.get("mtime_ns") == st.st_mtime_ns:
                lock.clips[rel] = old  # checked before and unchanged: not decoded again
            else:
                try:
                    lock.clips[rel] = inspect_clip(path).as_dict()
                except ClipError as exc:
                    lock.clips[rel] = {"error": str(exc), "bytes": st.st_size, "mtime_ns": st.st_mtime_ns}
                fresh += 1
                if fresh % SAVE_EVERY == 0:
                    _save_lock(lock, directory / (LOCK_NAME + ".partial"))
        if "error" in lock.clips[rel]:
            lock.corrupt[q.id] = lock.clips[rel]["error"]
            continue
        lock.item_clips[q.id] = rel
    if bar is not None:
        bar.close()


def refuse_changed_clips(benchmark: Benchmark, directory: Path, lock: Lock, progress: bool) -> None:
    """Before prepared data is reused, every clip the manifest uses is hashed again: a clip whose bytes
    are not the ones the lock records (the run's provenance copies the lock) stops the run with one
    line naming the clip, the lock and the fix, so the provenance never names audio the run did not read."""
    from musiceval.catalogue.check import changed_clips

    changed = changed_clips(lock, progress=progress, desc=f"verify {benchmark.name} audio")
    if not changed:
        return
    name, (rel, path, got) = benchmark.name, changed[0]
    more = f" ({len(changed) - 1} more clips differ too)" if len(changed) > 1 else ""
    recorded = f"{directory / LOCK_NAME} records sha256 {str(lock.clips.get(rel, {}).get('sha256'))[:12]}"
    what = (f"gone since `musiceval data prepare {name}` checked it ({recorded})" if got is None else
            f"its bytes changed since `musiceval data prepare {name}` checked it (sha256 {got[:12]}; {recorded})")
    raise PrepareError(f"{path}: {what}{more}; the run would read other audio than its provenance records: restore "
                       f"the original, or run `musiceval data prepare {name}` to check the clips again and record what "
                       f"they hold (`musiceval data check {name}` lists every problem)")


def ensure_prepared(benchmark: Benchmark, root: Path, *, audio_dir: Path | None = None, progress: bool = True,
                    log: Callable[[str], None] = print) -> PrepareReport:
    """The prepared benchmark: reused when its lock and manifest are intact (and the audio root is the
    one asked for) and every clip it uses still holds the bytes the lock records
    (:func:`refuse_changed_clips`), else prepared now (an entry ``prepared_as`` another: that one)."""
    benchmark = _prepared_entry(benchmark)
    directory = prepared_dir(root, benchmark)
    try:
        lock = read_lock(directory / LOCK_NAME)
        intact = (lock.version == LOCK_VERSION and (directory / MANIFEST_NAME).is_file()
                  and file_sha256(directory / MANIFEST_NAME) == lock.manifest_sha256
                  and (audio_dir is None or Path(lock.audio_root) == audio_dir.resolve()))
    except (LockError, OSError):
        intact = False
    if intact:
        refuse_changed_clips(benchmark, directory, lock, progress)
        return PrepareReport(benchmark, directory, lock, reused=True)
    try:
        return prepare(benchmark, root, audio_dir=audio_dir, progress=progress, log=log)
    except FetchError as exc:
        raise PrepareError(str(exc)) from None
