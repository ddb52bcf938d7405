"""What to tell a user whose machine cannot fetch a benchmark: one line saying what happened and
naming the fixes this code supports (docs/benchmarks.md, "Preparing offline").

- **Hub sources** are read through ``huggingface_hub``'s own cache, so a *hub-layout mirror* is a
  copy of a Hugging Face hub cache holding the dataset (``datasets--<org>--<name>/blobs``,
  ``snapshots/<commit>/<path>``, ``refs/main``), made with ``hf download ... --cache-dir DIR`` on
  a machine with the hub and given with ``HF_HUB_CACHE=DIR``; ``HF_ENDPOINT`` names another hub
  server (a mirror of huggingface.co); ``HF_HUB_OFFLINE=1`` reads only the cache.
- **URL sources**: ``$MUSICEVAL_URL_MIRROR/<host>/<path>`` stands for ``scheme://host/path``, or
  the file copied by hand to ``<prepared>/downloads/<name>``.
"""
from __future__ import annotations

import os
import shlex
import urllib.parse
from pathlib import Path

from musiceval.catalogue.network import TRANSIENT, UNREACHABLE, classify, describe
from musiceval.catalogue.spec import Source

#: the repository's page on preparing without network
DOC = "docs/benchmarks.md#preparing-offline"
#: a local mirror of release URLs: ``<mirror>/<host>/<path>`` stands for ``scheme://host/path``
MIRROR_ENV = "MUSICEVAL_URL_MIRROR"
#: the variables that put ``huggingface_hub`` offline (the second is read by it for transformers' sake)
OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_TRUE = ("1", "true", "yes", "on")


def offline_variable() -> str | None:
    """``"HF_HUB_OFFLINE=1"`` (as set) when the environment puts the hub offline, else None."""
    for name in OFFLINE_VARS:
        value = os.environ.get(name, "")
        if value.strip().lower() in _TRUE:
            return f"{name}={value}"
    return None


def hf_cli() -> str:
    """The hub's command-line tool as installed: ``hf`` (huggingface_hub >= 0.34), before it ``huggingface-cli``."""
    try:
        from huggingface_hub import __version__
    except ImportError:
        return "hf"
    parts = [int(p) if p.isdigit() else 0 for p in __version__.split(".")[:2]]
    return "hf" if parts >= [0, 34] else "huggingface-cli"


def hub_download_command(source: Source, cache_dir: str = "DIR") -> str:
    """The shell command that fills a hub cache ``cache_dir`` with what ``prepare`` reads of ``source``."""
    argv = [hf_cli(), "download", "--repo-type", "dataset", source.repo_id]
    if source.revision:
        argv += ["--revision", source.revision]
    for pattern in source.files:
        argv += ["--include", pattern]
    return shlex.join([*argv, "--cache-dir", cache_dir])


def _hub(source: Source) -> str:
    return f"hf:{source.repo_id}@{source.revision or 'main'}"


def _hub_cache() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def _fill_cache(source: Source) -> str:
    return (f"run `{hub_download_command(source)}` on a machine with the hub, copy DIR here and set HF_HUB_CACHE=DIR "
            "(a hub-layout mirror)")


def hub_unreachable(source: Source, exc: BaseException, *, partial: bool = False) -> str:
    """The hub did not answer and the cache lacks the dataset."""
    from huggingface_hub import constants

    happened = "could not be reached" if classify(exc) != TRANSIENT else "kept failing"
    cached = "is only partly in" if partial else "is not in"
    return (f"{_hub(source)}: the Hugging Face hub at {constants.ENDPOINT} {happened} ({describe(exc)}) and the dataset "
            f"{cached} the local Hugging Face cache {_hub_cache()}; to prepare it offline, {_fill_cache(source)}, "
            f"or set HF_ENDPOINT to a hub mirror you can reach (see {DOC})")


def hub_offline_miss(source: Source, *, partial: bool = False) -> str:
    """The user put the hub offline and the cache lacks the dataset."""
    variable = offline_variable() or "HF_HUB_OFFLINE=1"
    cached = "is only partly in" if partial else "is not in"
    return (f"{_hub(source)} {cached} the local Hugging Face cache {_hub_cache()}, and {variable} is set in the "
            f"environment, so the hub is not asked; unset {variable.split('=')[0]} to download it, or "
            f"{_fill_cache(source)} (see {DOC})")


def mirror_path(url: str) -> str:
    """``<host>/<path>``: where ``url`` lies under ``$MUSICEVAL_URL_MIRROR``."""
    parts = urllib.parse.urlparse(url)
    return f"{parts.netloc}/{parts.path.lstrip('/')}"


def url_unavailable(url: str, target: Path, exc: BaseException, *, attempts: int) -> str:
    """A release file that could not be downloaded."""
    kind = classify(exc)
    happened = {UNREACHABLE: "could not be reached", TRANSIENT: f"kept failing ({attempts} attempts)"}.get(kind, "failed")
    mirror = os.environ.get(MIRROR_ENV)
    now = f" (now {mirror}, which lacks it)" if mirror else ""
    return (f"{url}: {happened} ({describe(exc)}); to prepare offline, put the file at ${MIRROR_ENV}/{mirror_path(url)} "
            f"and set {MIRROR_ENV} to that folder{now}, or copy it to {target} (see {DOC})")
