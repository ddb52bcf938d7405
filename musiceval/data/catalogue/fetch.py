"""Fetching a benchmark's files: Hugging Face datasets through ``huggingface_hub``, release URLs
through ``urllib``, and unpacking the archives they come in.

- **Hub** (:func:`fetch_hub`): ``huggingface_hub.snapshot_download`` at the pinned revision with the
  entry's allow patterns. Its cache, ``HF_HUB_OFFLINE=1`` (read the cache, never the network) and
  the token (``HF_TOKEN`` or ``huggingface-cli login``) are the library's own: musiceval never
  reads, prints or writes a token. Interrupted downloads resume (the library keeps ``.incomplete``
  blobs). The resolved commit is the snapshot folder's name and goes into the lock file.
- **URL** (:func:`fetch_url`): one file per URL into ``<prepared>/downloads/``, written to
  ``<name>.part`` and renamed when complete; a rerun resumes a ``.part`` with an HTTP ``Range``
  request. ``file://`` URLs (a local mirror) are copied the same way.
- :func:`download_size` says how much will be downloaded before anything is (the hub's file sizes
  when online, else the entry's published size).
"""
from __future__ import annotations

import fnmatch
import os
import shutil
import tarfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable

from musiceval.data.catalogue.spec import Benchmark, Source


class FetchError(RuntimeError):
    """A source could not be fetched (the message names the source and the fix)."""


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


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

            info = HfApi().dataset_info(source.repo_id, revision=source.revision, files_metadata=True)
            sizes = [s.size or 0 for s in info.siblings or []
                     if not source.files or any(fnmatch.fnmatch(s.rfilename, p) for p in source.files)]
            return sum(sizes), "from the hub's file list"
        except Exception as exc:  # network or auth trouble: fall back to the published size
            return source.size_bytes, f"published size (the hub did not answer: {type(exc).__name__})"
    if source.kind == "hub":
        return source.size_bytes, "published size; HF_HUB_OFFLINE=1, so only the local cache is read"
    return source.size_bytes, "published size"


def fetch_hub(source: Source, *, progress: bool = True) -> tuple[dict[str, Path], str]:
    """``({relative path: local file}, resolved commit)`` of the snapshot at the source's revision."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    kwargs = {}
    if not progress:
        kwargs["tqdm_class"] = _NoBar
    try:
        folder = Path(snapshot_download(source.repo_id, repo_type="dataset", revision=source.revision,
                                        allow_patterns=list(source.files) or None, **kwargs))
    except LocalEntryNotFoundError:
        raise FetchError(f"hf:{source.repo_id}@{source.revision or 'main'} is not in the local Hugging Face cache and "
                         "HF_HUB_OFFLINE=1 forbids downloading; unset HF_HUB_OFFLINE on a machine with the hub, or run "
                         f"`huggingface-cli download --repo-type dataset {source.repo_id}"
                         f"{' --revision ' + source.revision if source.revision else ''}` there and copy the cache") from None
    except Exception as exc:
        name = type(exc).__name__
        if "Gated" in name or "Repository" in name or "401" in str(exc) or "403" in str(exc):
            raise FetchError(f"hf:{source.repo_id}: {name}; accept the dataset's terms on its hub page and log in "
                             "(`huggingface-cli login` or HF_TOKEN in the environment)") from None
        raise FetchError(f"hf:{source.repo_id}@{source.revision or 'main'}: {name}: {exc}; check the network or set "
                         "HF_HUB_OFFLINE=1 with a filled cache") from None
    files = {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file()}
    if source.files:
        files = {k: v for k, v in files.items() if any(fnmatch.fnmatch(k, pat) for pat in source.files)}
    if not files:
        raise FetchError(f"hf:{source.repo_id}@{folder.name[:12]}: no file matches {list(source.files)}; the dataset's "
                         "layout changed: pin the revision the catalogue names or update the entry")
    return files, folder.name


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


#: a local mirror of release URLs: ``<mirror>/<host>/<path>`` stands for ``scheme://host/path``
MIRROR_ENV = "MUSICEVAL_URL_MIRROR"


def mirrored(url: str) -> str:
    """``url``, or the ``file://`` URL of its copy under ``$MUSICEVAL_URL_MIRROR`` when there is one
    (an air-gapped machine, or the tests' local mirror)."""
    mirror = os.environ.get(MIRROR_ENV)
    if not mirror:
        return url
    parts = urllib.parse.urlparse(url)
    local = Path(mirror) / parts.netloc / parts.path.lstrip("/")
    return local.resolve().as_uri() if local.is_file() else url


def fetch_url(url: str, dest_dir: Path, *, progress: bool = True) -> Path:
    """Download ``url`` into ``dest_dir`` (resuming a ``.part`` file) and return the complete file."""
    name = PurePosixPath(urllib.parse.urlparse(url).path).name or "download"
    url = mirrored(url)
    dest_dir.mkdir(parents=True, exist_ok=True)
    target, part = dest_dir / name, dest_dir / (name + ".part")
    if target.is_file():
        return target
    have = part.stat().st_size if part.is_file() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        response = urllib.request.urlopen(request, timeout=60)  # noqa: S310 - the catalogue's own URLs or file://
    except Exception as exc:
        raise FetchError(f"{url}: {exc}; check the network, or download it by hand into {dest_dir}") from None
    with response:
        status = getattr(response, "status", None)
        if have and status != 206:  # the server (or file://) ignored the range: start again
            have = 0
        total = response.headers.get("Content-Length")
        total = int(total) + have if total and total.isdigit() else None
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=total, initial=have, unit="B", unit_scale=True, desc=f"download {name}", leave=False)
        with open(part, "ab" if have else "wb") as fh:
            for block in iter(lambda: response.read(1 << 20), b""):
                fh.write(block)
                if bar is not None:
                    bar.update(len(block))
        if bar is not None:
            bar.close()
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
    Paths that would leave ``dest`` are never written. Returns the number of members written."""
    written = 0

    def emit(target: str, size: int, read: Callable[[], object]) -> None:
        nonlocal written
        out = dest / target
        if out.is_file() and out.stat().st_size == size:
            return
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".part")
        with read() as src, open(tmp, "wb") as fh:  # type: ignore[attr-defined]
            shutil.copyfileobj(src, fh, 1 << 20)
        os.replace(tmp, out)
        written += 1

    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                name = _safe_member(info.filename)
                target = wanted(name) if name and not info.is_dir() else None
                if target and _safe_member(target):
                    emit(target, info.file_size, lambda info=info: zf.open(info))
        return written
    try:
        with tarfile.open(archive) as tf:
            for member in tf:
                name = _safe_member(member.name)
                target = wanted(name) if name and member.isfile() else None
                if target and _safe_member(target):
                    emit(target, member.size, lambda member=member: tf.extractfile(member))
    except tarfile.TarError as exc:
        raise FetchError(f"{archive}: not a readable archive ({exc}); delete it and run prepare again to download it anew") from None
    return written


def fetch(benchmark: Benchmark, prepared: Path, *, questions: Path | None = None,
          progress: bool = True) -> tuple[dict[str, Path], str | None]:
    """The benchmark's files (``{name: path}``) and the resolved revision (hub commit, else None).

    ``questions`` (``--questions FILE``) replaces the download with the user's copy of the question
    file (a benchmark whose files are not on a hub, or an offline machine)."""
    source = benchmark.source
    if questions is not None:
        if not questions.is_file():
            raise FetchError(f"--questions {questions}: no such file; pass the benchmark's question file "
                             f"({', '.join(benchmark.question_files)})")
        return {benchmark.question_files[0]: questions}, None
    if source.kind == "local":
        raise FetchError(f"{benchmark.name}: its questions are not downloadable ({source.unpinned or 'local files only'}); "
                         f"pass --questions FILE ({', '.join(benchmark.question_files)})")
    if source.kind == "hub":
        return fetch_hub(source, progress=progress)
    files: dict[str, Path] = {}
    for url in source.urls:
        path = fetch_url(url, prepared / "downloads", progress=progress)
        files[path.name] = path
    return files, None


def iter_names(files: Iterable[str]) -> list[str]:
    return sorted(files)
