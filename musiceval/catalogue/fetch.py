"""Fetching a benchmark's files: Hugging Face datasets through ``huggingface_hub``, release URLs
through ``urllib``, and unpacking the archives they come in.

- **Hub** (:func:`fetch_hub`): the hub is asked first (one small request, retried as
  :mod:`~musiceval.catalogue.network` says: once at once when it cannot be reached, with a
  doubling wait and a line on stderr when it is slow or busy); then ``huggingface_hub.snapshot_download``
  at the pinned revision with the entry's allow patterns. When the hub cannot be reached, a snapshot
  already in the local cache is used (said on stderr), else the error names the offline fixes
  (:mod:`~musiceval.catalogue.offline`). Its cache (``HF_HUB_CACHE``), ``HF_ENDPOINT``,
  ``HF_HUB_OFFLINE=1`` (read the cache, never the network) and the token (``HF_TOKEN`` or
  ``hf auth login``) are the library's own: musiceval never reads, prints or writes a token.
  Interrupted downloads resume (the library keeps ``.incomplete`` blobs). The resolved commit is the
  snapshot folder's name and goes into the lock file.
- **URL** (:func:`fetch_url`): one file per URL into ``<prepared>/downloads/``, written to
  ``<name>.part`` and renamed when complete; a retry or a rerun resumes a ``.part`` with an HTTP
  ``Range`` request. ``$MUSICEVAL_URL_MIRROR/<host>/<path>`` (a local mirror) is copied the same way
  as a ``file://`` URL; a file missing from the mirror is said on stderr and downloaded.
- :func:`download_size` says how much will be downloaded before anything is (the hub's file sizes
  when online, else the entry's published size).
- :func:`extract_members` unpacks; an archive that cannot be read to its end (cut short, a bad
  CRC) is a :class:`DamagedArchive`, which ``prepare`` deletes and names with the command that
  downloads it again. A full disk is one :class:`~musiceval.writes.WriteError` line naming the file
  (a ``.part`` download is kept and resumed; no half-unpacked member is left).
"""
from __future__ import annotations

import fnmatch
import glob
import http.client
import lzma
import os
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Callable

from musiceval.catalogue.network import UNREACHABLE, classify, describe, with_retries
from musiceval.catalogue.offline import (
    MIRROR_ENV,
    hf_cli,
    hub_offline_miss,
    hub_unreachable,
    mirror_path,
    offline_variable,
    url_unavailable,
)
from musiceval.catalogue.spec import Benchmark, Source
from musiceval.writes import DISK_FULL, WriteError, cannot_write, remove_quietly

#: seconds the hub's first answer may take (then it counts as a timeout, retried)
HUB_TIMEOUT = 10.0
#: seconds a release server may stay silent during a download
URL_TIMEOUT = 60.0
#: tries of one download in all, retries on transient failures included
ATTEMPTS = 4


class FetchError(RuntimeError):
    """A source could not be fetched (the message names the source and the fix)."""


class DamagedArchive(FetchError):
    """A downloaded archive that cannot be read to its end (cut short, or corrupt): ``archive`` is the
    file, ``detail`` what reading it said. ``musiceval data prepare`` deletes it and names the command
    that downloads it again (:func:`musiceval.catalogue.prepare.discard_damaged`)."""

    def __init__(self, archive: Path, detail: str):
        super().__init__(f"{archive}: a damaged or partial archive ({detail}); delete it and run "
                         "`musiceval data prepare` again to download it anew")
        self.archive, self.detail = Path(archive), detail


#: the fix a download or an unpacked file that cannot be written names
DATA_ROOT_FIX = "pass --data-root DIR (or $MUSICEVAL_DATA) on a writable disk; a rerun resumes"
#: the same, for a file of the Hugging Face cache
HUB_CACHE_FIX = "set HF_HUB_CACHE to a folder on a writable disk; a rerun resumes"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def hub_offline() -> bool:
    """Whether ``huggingface_hub`` is offline: ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) set by the user."""
    if offline_variable():
        return True
    try:
        from huggingface_hub import constants
    except ImportError:
        return False
    return bool(getattr(constants, "HF_HUB_OFFLINE", False))


def human_bytes(n: int | None) -> str:
    if n is None:
        return "unknown size"
    size = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"


def download_size(source: Source) -> tuple[int | None, str]:
    """``(bytes, how known)`` of what fetching ``source`` downloads (None when it cannot be known)."""
    if source.kind == "hub" and not hub_offline():
        try:
            from huggingface_hub import HfApi

            info = HfApi().dataset_info(source.repo_id, revision=source.revision, files_metadata=True, timeout=HUB_TIMEOUT)
            sizes = [s.size or 0 for s in info.siblings or []
                     if not source.files or any(fnmatch.fnmatch(s.rfilename, p) for p in source.files)]
            return sum(sizes), "from the hub's file list"
        except Exception as exc:  # network or auth trouble: fetch_hub says what it means
            return source.size_bytes, f"published size (the hub did not answer: {type(exc).__name__})"
    if source.kind == "hub":
        return source.size_bytes, f"published size; {offline_variable() or 'HF_HUB_OFFLINE=1'}, so only the local cache is read"
    return source.size_bytes, "published size"


def _hub_refusal(source: Source, exc: Exception) -> str:
    """The hub answered, with a no."""
    where, name = f"hf:{source.repo_id}@{source.revision or 'main'}", type(exc).__name__
    if "Revision" in name:
        return (f"{where}: the hub has no such revision ({describe(exc)}); the catalogue's pin is out of date: "
                "update the entry's revision")
    if "Gated" in name or "Repository" in name or "401" in str(exc) or "403" in str(exc):
        login = f"`{hf_cli()} auth login`" if hf_cli() == "hf" else "`huggingface-cli login`"
        return (f"hf:{source.repo_id}: {name}; accept the dataset's terms on its hub page and log in "
                f"({login} or HF_TOKEN in the environment)")
    return f"{where}: {describe(exc)}; rerun `musiceval data prepare` (downloads resume), or prepare offline (docs/benchmarks.md#preparing-offline)"


def _is_partial(miss: BaseException) -> bool:
    return type(miss).__name__ == "IncompleteSnapshotError"


def fetch_hub(source: Source, *, progress: bool = True,
              log: Callable[[str], None] = _stderr) -> tuple[dict[str, Path], str]:
    """``({relative path: local file}, resolved commit)`` of the snapshot at the source's revision."""
    from huggingface_hub import HfApi, constants, snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    where = f"hf:{source.repo_id}@{source.revision or 'main'}"
    kwargs: dict = {"repo_type": "dataset", "revision": source.revision, "allow_patterns": list(source.files) or None}
    if not progress:
        kwargs["tqdm_class"] = _NoBar
    if hub_offline():
        try:
            folder = Path(snapshot_download(source.repo_id, local_files_only=True, **kwargs))
        except LocalEntryNotFoundError as miss:
            raise FetchError(hub_offline_miss(source, partial=_is_partial(miss))) from None
    else:
        try:
            with_retries(lambda: HfApi().dataset_info(source.repo_id, revision=source.revision, timeout=HUB_TIMEOUT),
                         what=f"{where} (hub {constants.ENDPOINT})", log=log, attempts=ATTEMPTS)
        except Exception as exc:
            if classify(exc) is None:
                raise FetchError(_hub_refusal(source, exc)) from None
            try:
                folder = Path(snapshot_download(source.repo_id, local_files_only=True, **kwargs))
            except LocalEntryNotFoundError as miss:
                raise FetchError(hub_unreachable(source, exc, partial=_is_partial(miss))) from None
            happened = "could not be reached" if classify(exc) == UNREACHABLE else "kept failing"
            log(f"{where}: the hub at {constants.ENDPOINT} {happened} ({describe(exc)}); using the snapshot "
                f"{folder.name[:12]} from the local Hugging Face cache {constants.HF_HUB_CACHE}")
        else:
            try:
                folder = Path(snapshot_download(source.repo_id, **kwargs))
            except LocalEntryNotFoundError as miss:  # the connection went after the first answer
                raise FetchError(hub_unreachable(source, miss.__cause__ or miss, partial=_is_partial(miss))) from None
            except Exception as exc:
                full = _disk_full(exc)
                if full is not None:  # the hub cache's disk: one line naming it (the download resumes)
                    where = full.filename or Path(constants.HF_HUB_CACHE) / f"datasets--{source.repo_id.replace('/', '--')}"
                    raise WriteError(cannot_write(where, full, HUB_CACHE_FIX)) from None
                if classify(exc) is not None:
                    raise FetchError(hub_unreachable(source, exc)) from None
                raise FetchError(_hub_refusal(source, exc)) from None
    files = {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file()}
    if source.files:
        files = {k: v for k, v in files.items() if any(fnmatch.fnmatch(k, pat) for pat in source.files)}
    if not files:
        raise FetchError(f"hf:{source.repo_id}@{folder.name[:12]}: no file matches {list(source.files)}; the dataset's "
                         "layout changed: pin the revision the catalogue names or update the entry")
    absent = [name for name in source.files if not any(c in name for c in "*?[") and name not in files]
    if absent and hub_offline():  # a snapshot only partly in the cache (a damaged archive was deleted from it)
        raise FetchError(f"{', '.join(absent)}: not in the snapshot; " + hub_offline_miss(source, partial=True))
    return files, folder.name


def _disk_full(exc: BaseException) -> OSError | None:
    """The full-disk ``OSError`` (ENOSPC, EDQUOT) in ``exc``'s chain, if any."""
    seen: BaseException | None = exc
    for _ in range(20):  # a chain is short; a cycle is not followed for ever
        if seen is None:
            return None
        if isinstance(seen, OSError) and seen.errno in DISK_FULL:
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


class _NoBar:  # tqdm stand-in for --no-progress
    def __init__(self, *args, **kwargs):
        self.n = 0

    def update(self, n=1):
        self.n += n

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def close(self):
        pass


def mirrored(url: str, log: Callable[[str], None] | None = None) -> str:
    """``url``, or the ``file://`` URL of its copy under ``$MUSICEVAL_URL_MIRROR`` when there is one
    (an air-gapped machine, or the tests' local mirror). A mirror that lacks the file is said to ``log``."""
    mirror = os.environ.get(MIRROR_ENV)
    if not mirror:
        return url
    local = Path(mirror) / mirror_path(url)
    if local.is_file():
        return local.resolve().as_uri()
    if log is not None:
        log(f"{url}: not in ${MIRROR_ENV} (no {local}); downloading it")
    return url


#: what a failed download raises that :func:`fetch_url` turns into a :class:`FetchError`
_NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException, TimeoutError, ConnectionError)


def _download(url: str, part: Path, name: str, progress: bool) -> None:
    """One try: ``url`` into ``part``, resuming what is there with a Range request."""
    have = part.stat().st_size if part.is_file() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    with urllib.request.urlopen(request, timeout=URL_TIMEOUT) as response:  # noqa: S310 - the catalogue's own URLs or file://
        status = getattr(response, "status", None)
        if have and status != 206:  # the server (or file://) ignored the range: start again
            have = 0
        total = response.headers.get("Content-Length")
        total = int(total) + have if total and total.isdigit() else None
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=total, initial=have, unit="B", unit_scale=True, desc=f"download {name}", leave=False,
                       file=sys.stderr)
        try:
            with open(part, "ab" if have else "wb", buffering=0) as fh:  # unbuffered: each write fails where it happens
                for block in iter(lambda: response.read(1 << 20), b""):
                    _write(fh, block, part)
                    if bar is not None:
                        bar.update(len(block))
        finally:
            if bar is not None:
                bar.close()


def _write(fh, block: bytes, path: Path) -> None:
    """All of ``block`` into the unbuffered file ``fh``; a full disk is a
    :class:`~musiceval.writes.WriteError` naming ``path`` (a ``.part`` download is kept: the rerun
    resumes it)."""
    try:
        view = memoryview(block)
        while view:
            view = view[fh.write(view):]
    except OSError as exc:
        raise WriteError(cannot_write(path, exc, DATA_ROOT_FIX)) from None


def fetch_url(url: str, dest_dir: Path, *, progress: bool = True, log: Callable[[str], None] = _stderr) -> Path:
    """Download ``url`` into ``dest_dir`` (resuming a ``.part`` file) and return the complete file.

    A server that cannot be reached fails within about a second; a slow or busy one is retried
    (:func:`~musiceval.catalogue.network.with_retries`), each retry said to ``log``."""
    name = PurePosixPath(urllib.parse.urlparse(url).path).name or "download"
    dest_dir.mkdir(parents=True, exist_ok=True)
    target, part = dest_dir / name, dest_dir / (name + ".part")
    if target.is_file():
        return target
    source = mirrored(url, log)
    try:
        with_retries(lambda: _download(source, part, name, progress), what=url, log=log, attempts=ATTEMPTS)
    except Exception as exc:
        if not isinstance(exc, _NETWORK_ERRORS) and classify(exc) is None:
            raise
        raise FetchError(url_unavailable(url, target, exc, attempts=ATTEMPTS)) from None
    os.replace(part, target)
    return target


def _safe_member(name: str) -> str | None:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not name.strip("/"):
        return None
    return path.as_posix()


def extract_members(archive: Path, dest: Path, wanted: Callable[[str], str | None], *, progress: bool = True) -> int:
    """Write the members of a ``.tar(.gz)`` or ``.zip`` for which ``wanted(name)`` gives a target
    (a path relative to ``dest``); members already there with the same size are skipped (resumable).
    Paths that would leave ``dest`` are never written. Returns the number of members written.

    An archive that cannot be read to its end (cut short, a bad CRC: a tar.gz's is checked once its
    stream is read through) raises :class:`DamagedArchive`; the members this call wrote from it
    are removed (a tar.gz member's bytes are only vouched for by that final check)."""
    made: list[Path] = []

    def emit(target: str, size: int, read: Callable[[], object]) -> None:
        out = dest / target
        if out.is_file() and out.stat().st_size == size:
            return
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".part")
        try:
            with read() as src, open(tmp, "wb", buffering=0) as fh:  # type: ignore[attr-defined]
                for block in iter(lambda: src.read(1 << 20), b""):
                    _write(fh, block, out)
            os.replace(tmp, out)
        except BaseException:  # a damaged member or a full disk: no partial member is left
            remove_quietly(tmp)
            raise
        made.append(out)

    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    name = _safe_member(info.filename)
                    target = wanted(name) if name and not info.is_dir() else None
                    if target and _safe_member(target):
                        emit(target, info.file_size, lambda info=info: zf.open(info))
            return len(made)
        if archive.name.lower().endswith(".zip"):  # a zip's directory is at its end: a cut-short one has none
            raise zipfile.BadZipFile("no zip directory at its end (cut short, or not a zip file)")
        with tarfile.open(archive) as tf:
            for member in tf:
                name = _safe_member(member.name)
                target = wanted(name) if name and member.isfile() else None
                if target and _safe_member(target):
                    emit(target, member.size, lambda member=member: tf.extractfile(member))
            while tf.fileobj.read(1 << 20):  # to the end of the stream: gzip, bz2 and xz check it there
                pass
    except Exception as exc:
        if not _damaged(exc):
            raise
        for out in made:
            remove_quietly(out)
        raise DamagedArchive(archive, " ".join(f"{type(exc).__name__}: {exc}".split())) from None
    return len(made)


def _damaged(exc: BaseException) -> bool:
    """Whether reading an archive raised for its content (cut short, a bad CRC or header), not for
    the disk (a full disk, a permission: an ``OSError`` with an errno)."""
    if isinstance(exc, WriteError):
        return False
    if isinstance(exc, (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError)):
        return True
    return isinstance(exc, OSError) and exc.errno is None  # gzip's BadGzipFile, bz2's "Invalid data stream"


def fetch(benchmark: Benchmark, prepared: Path, *, questions: Path | None = None, progress: bool = True,
          log: Callable[[str], None] = _stderr) -> tuple[dict[str, Path], str | None]:
    """The benchmark's files (``{name: path}``) and the resolved revision (hub commit, else None).

    ``questions`` (``--questions FILE``) replaces the download with the user's copy of the question
    file (a benchmark whose files are not on a hub, or an offline machine); for a benchmark that reads
    several files it may be the folder holding them, at the paths its ``question_files`` name."""
    source = benchmark.source
    if questions is not None:
        if len(benchmark.question_files) > 1:  # a folder of several files (MedleyDB's melody2/)
            if not questions.is_dir():
                raise FetchError(f"--questions {questions}: {benchmark.name} reads {len(benchmark.question_files)} files "
                                 f"({benchmark.question_files[0]}, ...); pass the folder that holds them")
            return files_in_folder(benchmark, questions), None
        if not questions.is_file():
            raise FetchError(f"--questions {questions}: no such file; pass the benchmark's question file "
                             f"({', '.join(benchmark.question_files)})")
        return {benchmark.question_files[0]: questions}, None
    if source.kind == "local":
        raise FetchError(f"{benchmark.name}: its questions are not downloadable ({source.unpinned or 'local files only'}); "
                         f"pass --questions FILE ({', '.join(benchmark.question_files)})")
    if source.kind == "hub":
        return fetch_hub(source, progress=progress, log=log)
    files: dict[str, Path] = {}
    for url in source.urls:
        path = fetch_url(url, prepared / "downloads", progress=progress, log=log)
        files[path.name] = path
    return files, None


def files_in_folder(benchmark: Benchmark, folder: Path) -> dict[str, Path]:
    """``{name: path}`` of the question files under ``folder`` that ``benchmark`` reads: each name its
    ``question_files`` give, a pattern (``data/label/train/*.csv``) standing for every file it matches;
    FetchError names the first name that matches no file and the fix."""
    found: dict[str, Path] = {}
    missing = []
    for name in benchmark.question_files:
        paths = sorted(p for p in folder.glob(name) if p.is_file()) if glob.has_magic(name) else \
            [folder / name] if (folder / name).is_file() else []
        found.update({p.relative_to(folder).as_posix(): p for p in paths})
        if not paths:
            missing.append(name)
    if missing:
        raise FetchError(f"--questions {folder}: {len(missing)} of the {len(benchmark.question_files)} files "
                         f"{benchmark.name} reads are not under it (first: {missing[0]}); pass the folder that holds them")
    return found
