"""One default location for every on-disk cache of the ``musiceval`` commands.

``--cache-dir DIR`` names the root; each cache lives in its own sub-folder of it
(``embeddings/``, ``responses/``, ``judge/``: the LLM judge's replies), the layout the pytest
plugin's ``--musiceval-cache-dir`` reads.
Without the flag the root is ``$MUSICEVAL_CACHE``, else the platform cache directory
(``platformdirs.user_cache_dir("musiceval")`` when platformdirs is installed, else
``$XDG_CACHE_HOME/musiceval`` or ``~/.cache/musiceval``).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

ENV = "MUSICEVAL_CACHE"
EMBEDDINGS = "embeddings"
RESPONSES = "responses"
#: the LLM judge's replies (:class:`musiceval.protocols.judge.engine.Judge`)
JUDGE = "judge"


def default_cache_dir() -> Path:
    """The cache root when ``--cache-dir`` is not given: ``$MUSICEVAL_CACHE`` or the platform's."""
    given = os.environ.get(ENV)
    if given:
        return Path(given).expanduser()
    try:
        from platformdirs import user_cache_dir
    except ImportError:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return Path(base) / "musiceval"
    return Path(user_cache_dir("musiceval", appauthor=False))


def add_cache_dir_argument(parser: argparse.ArgumentParser, what: str = "caches") -> None:
    """Add ``--cache-dir DIR`` (the root of every cache) to a command."""
    parser.add_argument("--cache-dir", default=None, metavar="DIR",
                        help=f"root of the on-disk {what} (sub-folders embeddings/, responses/); "
                             f"default ${ENV}, else the platform cache directory")


def cache_path(args: argparse.Namespace, sub: str) -> Path:
    """The folder of one cache: ``--cache-dir``/``sub``, else :func:`default_cache_dir`/``sub``."""
    return cache_folder(getattr(args, "cache_dir", None), sub)


def cache_folder(root: str | os.PathLike[str] | None, sub: str) -> Path:
    """``root``/``sub`` (a ``--cache-dir`` value), else :func:`default_cache_dir`/``sub``."""
    return (Path(root) if root else default_cache_dir()) / sub
