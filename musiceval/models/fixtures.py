"""pytest fixtures for live Music LMs, loaded by musiceval's pytest plugin.

- ``music_lm`` (session): the adapter ``--model MODEL_SPEC`` names, built once per xdist worker and
  closed at session end (GPU memory released). On a machine with several GPUs each worker takes
  ``cuda:<worker index mod GPU count>``; group tests that share a model with
  ``@pytest.mark.xdist_group("music_lm")`` and run ``pytest evals/ -n 4 --dist loadgroup`` so a
  model loads on as few workers as possible. Skips with the fix when ``--model`` names no live
  model (the embedded ``recorded`` default).
- ``live_music_lm`` (session): ``(model, real)`` for the gates on the synthesised clips of
  ``musiceval/evals/audio``: the ``music_lm`` of a live ``--model`` (``real`` True), or, on the embedded
  default and ``recorded:FILE`` (recorded answers never cover those clips), a tiny randomly
  initialised Qwen2-Audio built in a temporary directory and loaded through the real ``hf:``
  adapter on CPU (``real`` False: its answers are noise, so gates on it are findings).
- ``response_cache`` (session): the :class:`~musiceval.models.cache.ResponseCache` all workers
  share, in ``<--musiceval-cache-dir>/responses`` (what ``musiceval generate --cache-dir`` fills with
  the same DIR).
- ``generation_settings`` (session): greedy decoding seeded with ``--seed``, overridden by the
  generation keys of ``--musiceval-model-args`` (``max_new_tokens``, ``temperature``,
  ``do_sample``, ``seed``) when the plugin defines that option.
- ``music_lm`` also passes the load keys of ``--musiceval-model-args`` (``dtype``, ``device_map``,
  ``revision``, ``attn_implementation``, ``trust_remote_code``...) to ``load_model``; see
  :func:`model_args_from_config`.

Fixtures ``model_spec``, ``musiceval_seed`` and ``musiceval_cache_dir`` come from the plugin.
"""
from __future__ import annotations

import gc
import os
import re
import sys
from pathlib import Path
from typing import Iterator

import pytest

from musiceval.models.base import GenerationSettings, MusicLM, load_model, split_spec
from musiceval.models.cache import ResponseCache

__all__ = ["music_lm", "live_music_lm", "response_cache", "generation_settings", "cuda_device_for_worker", "worker_index",
           "model_args_from_config"]

#: ``--model`` values that mean "no live model": the plugin's embedded recorded default.
EMBEDDED_DEFAULTS = {"recorded", ""}


def worker_index(worker_id: str | None = None) -> int:
    """``"gw3"`` -> 3; 0 outside xdist (``PYTEST_XDIST_WORKER`` unset or not ``gwN``)."""
    worker_id = os.environ.get("PYTEST_XDIST_WORKER", "") if worker_id is None else worker_id
    match = re.fullmatch(r"gw(\d+)", worker_id or "")
    return int(match.group(1)) if match else 0


def cuda_device_for_worker(worker_id: str | None = None, n_gpus: int | None = None) -> str | None:
    """The CUDA device this worker should use (``cuda:i``), or None without CUDA."""
    if n_gpus is None:
        try:
            import torch
        except ImportError:
            return None
        n_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n_gpus <= 0:
        return None
    return f"cuda:{worker_index(worker_id) % n_gpus}"


def _option(config: pytest.Config, name: str, default=None):
    try:
        value = config.getoption(name)
    except ValueError:  # the plugin does not define this option
        return default
    return default if value is None else value


def model_args_from_config(config: pytest.Config) -> dict:
    """The typed model arguments of this run: the suite config's ``args`` of the live model,
    overlaid with ``--musiceval-model-args`` (``{}`` when neither is given).

    A malformed value fails the session at once with the parser's message (unknown key, bad type).
    """
    from musiceval.models.args import coerce_model_args, parse_model_args

    suite = getattr(config, "_musiceval", {}).get("suite")
    live = suite.live_models() if suite is not None else []
    text = _option(config, "--musiceval-model-args", "")
    try:
        args = coerce_model_args(live[0].args) if live and live[0].args else {}
        args.update(dict(text) if isinstance(text, dict) else parse_model_args(str(text)))
    except ValueError as exc:
        raise pytest.UsageError(f"model arguments: {exc}") from None
    return args


def _release_gpu_memory() -> None:
    gc.collect()
    torch = sys.modules.get("torch")  # a model that never imported torch holds no GPU memory
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


@pytest.fixture(scope="session")
def music_lm(request: pytest.FixtureRequest, model_spec: str) -> Iterator[MusicLM]:
    if model_spec.strip() in EMBEDDED_DEFAULTS:
        pytest.skip("not applicable: no live model: pass --musiceval-model hf:<dir> or openai-compatible:<url>#<model>, "
                    "or declare live = \"...\" for the model in the suite config")
    from musiceval.models.args import split_model_args

    options: dict = {"concurrency": int(_option(request.config, "musiceval_concurrency", 8))}
    load_args, _ = split_model_args(model_args_from_config(request.config))
    if split_spec(model_spec)[0] in ("hf", "text-only", "text-only-silence") and "device_map" not in load_args:
        device = cuda_device_for_worker()
        if device:
            options["device"] = device
    model = load_model(model_spec, **{**options, **load_args})
    try:
        yield model
    finally:
        model.close()
        del model
        _release_gpu_memory()


@pytest.fixture(scope="session")
def live_music_lm(request: pytest.FixtureRequest, model_spec: str, tmp_path_factory) -> Iterator[tuple[MusicLM, bool]]:
    if split_spec(model_spec)[0] != "recorded":
        yield request.getfixturevalue("music_lm"), True
        return
    pytest.importorskip("transformers")
    from musiceval.models.qwen2audio import build_tiny_checkpoint

    model = load_model(f"hf:{build_tiny_checkpoint(tmp_path_factory.mktemp('tiny-qwen2-audio'))}", device="cpu", num_threads=1)
    try:
        yield model, False
    finally:
        model.close()


@pytest.fixture(scope="session")
def response_cache(musiceval_cache_dir: Path) -> ResponseCache:
    """``<--musiceval-cache-dir>/responses``: the cache ``musiceval generate --cache-dir`` fills, shared by workers."""
    return ResponseCache(Path(musiceval_cache_dir) / "responses")


@pytest.fixture(scope="session")
def generation_settings(request: pytest.FixtureRequest, musiceval_seed: int) -> GenerationSettings:
    from musiceval.models.args import split_model_args

    base = GenerationSettings(temperature=0.0, max_tokens=256, seed=int(musiceval_seed))
    return split_model_args(model_args_from_config(request.config), base)[1]
