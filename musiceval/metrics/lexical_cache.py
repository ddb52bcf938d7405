"""Lexical scores kept on disk, so a warm run does not score (nor load WordNet for) the same pairs again.

:func:`musiceval.metrics.lexical_corpus.lexical_scores` with a ``store`` reads the whole call's
scores from a :class:`LexicalScoreCache` (``<embedding cache>/lexical-scores/<key>.npz``) when the
same call was made before, and stores them otherwise. The key (:func:`call_key`) is a sha256 of

- :func:`implementation_version`: the source of every module that computes the scores
  (:data:`IMPLEMENTATION_MODULES`), the installed nltk's version and the WordNet files nltk would
  read (path, size and modification time of each), so any change to how a score is computed is
  another key;
- the exact call: the metrics asked for, in order, every candidate and reference text, the CIDEr-D
  document-frequency corpus, and the ROUGE-L stemming flag.

Values are float64 arrays stored as they were computed, so a hit equals a fresh computation bit
for bit (``tests/metrics/test_lexical_cache.py``). Entries are written to a temporary file and
renamed into place, so pytest-xdist workers sharing the folder never read a partial entry; an
entry that cannot be read or does not match its key (a torn or foreign file) is a miss, warned
about once, recomputed and written again. An unwritable folder only means nothing is kept.
docs/performance.md ("Cold one-file runs", "Warm runs") has what it saves: on a warm run the
lexical metrics and WordNet's load (5.6 CPU-s of MusicQA's 5,040 items, 3.6 of them WordNet).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

#: the modules whose code computes the lexical scores: their source is part of every key
IMPLEMENTATION_MODULES = ("musiceval.metrics.lexical", "musiceval.metrics.lexical_corpus", "musiceval.metrics.meteor",
                          "musiceval.metrics.cider", "musiceval.metrics.token_cache", "musiceval.metrics.stemmers")
#: the layout of an entry and of its key; raise it when either changes
FORMAT = 1
#: WordNet's files METEOR reads (their size and modification time are part of the key)
_WORDNET_FILES = ("data.adj", "data.adv", "data.noun", "data.verb", "index.adj", "index.adv", "index.noun",
                  "index.verb", "lexnames", "adj.exc", "adv.exc", "noun.exc", "verb.exc")


def _nltk_data_path() -> list[str]:
    """nltk's data search path (``nltk.data.path``) as nltk builds it, without importing nltk (its
    import takes a second or two: it imports scikit-learn)."""
    path = [d for d in os.environ.get("NLTK_DATA", "").split(os.pathsep) if d]
    if "APPENGINE_RUNTIME" not in os.environ and os.path.expanduser("~/") != "~/":
        path.append(os.path.expanduser("~/nltk_data"))
    if sys.platform.startswith("win"):
        path += [os.path.join(sys.prefix, "nltk_data"), os.path.join(sys.prefix, "share", "nltk_data"),
                 os.path.join(sys.prefix, "lib", "nltk_data"), os.path.join(os.environ.get("APPDATA", "C:\\"), "nltk_data"),
                 r"C:\nltk_data", r"D:\nltk_data", r"E:\nltk_data"]
    else:
        path += [os.path.join(sys.prefix, "nltk_data"), os.path.join(sys.prefix, "share", "nltk_data"),
                 os.path.join(sys.prefix, "lib", "nltk_data"), "/usr/share/nltk_data", "/usr/local/share/nltk_data",
                 "/usr/lib/nltk_data", "/usr/local/lib/nltk_data"]
    return path


def _wordnet_files() -> list[Any]:
    """``[folder, (name, size, mtime_ns) ...]`` of the first WordNet on nltk's path (a folder or a
    zip archive), or ``[None]``."""
    for root in _nltk_data_path():
        folder = Path(root) / "corpora" / "wordnet"
        if folder.is_dir():
            stats = []
            for name in _WORDNET_FILES:
                try:
                    st = (folder / name).stat()
                except OSError:
                    continue
                stats.append((name, st.st_size, st.st_mtime_ns))
            return [str(folder.resolve()), stats]
        archive = folder.with_suffix(".zip")
        if archive.is_file():
            st = archive.stat()
            return [str(archive.resolve()), [(archive.name, st.st_size, st.st_mtime_ns)]]
    return [None]


@lru_cache(maxsize=1)
def implementation_version() -> str:
    """A digest of what computes the lexical scores: the source of :data:`IMPLEMENTATION_MODULES`,
    nltk's version and WordNet's files (see the module docstring)."""
    import importlib.metadata
    import importlib.util

    digest = hashlib.sha256(f"musiceval-lexical-scores:{FORMAT}".encode())
    for name in IMPLEMENTATION_MODULES:
        origin = importlib.util.find_spec(name).origin
        digest.update(name.encode() + b"\0" + Path(origin).read_bytes() + b"\0")
    try:
        nltk_version = importlib.metadata.version("nltk")
    except importlib.metadata.PackageNotFoundError:
        nltk_version = None
    digest.update(json.dumps([nltk_version, _wordnet_files()]).encode())
    return digest.hexdigest()


def call_key(candidates: Sequence[str], references: Sequence[str | Sequence[str]], metrics: Sequence[str],
             df_references: Sequence[str | Sequence[str]] | None, use_stemmer: bool) -> str:
    """The key of one :func:`~musiceval.metrics.lexical_corpus.lexical_scores` call (module docstring)."""
    def texts(refs):
        return None if refs is None else [r if isinstance(r, str) else list(r) for r in refs]

    payload = json.dumps([implementation_version(), list(metrics), list(candidates), texts(references),
                          texts(df_references), bool(use_stemmer)], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


class LexicalScoreCache:
    """Lexical scores per call on disk, ``<folder>/lexical-scores/<key>.npz``: ``get(key, metrics, n)``
    and ``put(key, scores)``. ``folder`` is the embedding cache's folder (beside its SQLite file and
    the MIR baselines)."""

    DIRNAME = "lexical-scores"

    def __init__(self, folder: str | os.PathLike[str]):
        self.root = Path(folder) / self.DIRNAME
        #: calls answered from the folder, and calls computed and stored (for tests and benchmarks)
        self.hits = self.misses = 0

    def path(self, key: str) -> Path:
        return self.root / f"{key}.npz"

    def get(self, key: str, metrics: Sequence[str], n: int) -> dict[str, np.ndarray] | None:
        """The stored scores of ``metrics`` (``n`` pairs each), or None: no entry, or one that cannot
        be read or is not this call's (warned about; the caller computes and stores it again)."""
        path = self.path(key)
        try:
            with np.load(path, allow_pickle=False) as entry:
                if str(entry["key"]) != key:
                    raise ValueError(f"it holds the scores of another call ({str(entry['key'])[:12]})")
                out = {m: entry[f"metric_{m}"] for m in metrics}
        except (FileNotFoundError, NotADirectoryError):  # never stored (or no folder to store in)
            return None
        except Exception as exc:  # a torn, truncated or foreign file: zipfile, OSError, KeyError, ValueError
            self._refuse(path, exc)
            return None
        if any(v.dtype != np.float64 or v.shape != (n,) for v in out.values()):
            self._refuse(path, ValueError(f"its arrays are not {n} float64 values each"))
            return None
        self.hits += 1
        return out

    def put(self, key: str, scores: Mapping[str, np.ndarray]) -> None:
        """Store ``scores`` under ``key``: written whole to a temporary file, then renamed into place
        (a concurrent reader sees the old entry, the new one, or none). Nothing on an ``OSError``."""
        import tempfile

        self.misses += 1
        tmp = None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=f".{key[:16]}-", suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, key=np.array(key), **{f"metric_{m}": np.asarray(v, dtype=np.float64) for m, v in scores.items()})
            os.replace(tmp, self.path(key))
        except OSError:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    @staticmethod
    def _refuse(path: Path, exc: BaseException) -> None:
        cause = " ".join(str(exc).split())[:200] or type(exc).__name__
        warnings.warn(f"lexical score cache {path}: unreadable ({type(exc).__name__}: {cause}); the scores were "
                      "computed again and the entry rewritten (delete the file if this repeats)", stacklevel=3)
