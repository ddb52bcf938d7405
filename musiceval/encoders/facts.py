"""What an encoder's weights say about the rows it computes, read without loading the model: the
row dimension (``hidden_size`` in the model's ``config.json``) and a revision of the weights.

The embedding cache checks every row it serves against these (docs/hardening.md "Cached rows are
the encoder's own"): a row of another dimension than the encoder states, or written under other
weights, is refused and recomputed. A loaded encoder and a :class:`~musiceval.encoders.lazy.LazyEncoder`
of the same spec state the same facts, so they share rows.

The revision is the sha256 (first 16 hex digits) of ``config.json`` and of the name and size of each
weights file beside it: weights retrained in place into files of the same sizes keep the revision
(hashing gigabytes of weights on every run would cost more than the cache saves); clear their rows
with ``musiceval cache --drop ENCODER_ID``.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

#: files holding weights (their names and sizes enter the revision)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".msgpack", ".h5", ".onnx")


def model_directory(name_or_path: str) -> Path | None:
    """The directory of a model: ``name_or_path`` itself, or the local Hugging Face snapshot of a hub
    id (offline lookup); None when neither is on this machine."""
    if os.path.isdir(name_or_path):
        return Path(name_or_path)
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name_or_path, "config.json")
    except Exception:  # not a valid repo id, no huggingface_hub: nothing known
        return None
    return Path(found).parent if isinstance(found, str) else None


def model_facts(name_or_path: str) -> tuple[int | None, str | None]:
    """``(dimension, revision)`` of the model at ``name_or_path`` (a directory or a cached hub id);
    ``None`` for what its files do not say."""
    directory = model_directory(name_or_path)
    if directory is None:
        return None, None
    config = directory / "config.json"
    try:
        raw = config.read_bytes()
    except OSError:
        return None, None
    digest = hashlib.sha256(raw)
    try:
        names = sorted(p for p in os.listdir(directory) if p.endswith(WEIGHT_SUFFIXES))
        for name in names:
            digest.update(f"\0{name}\0{os.stat(directory / name).st_size}".encode())
    except OSError:
        pass
    try:
        hidden = json.loads(raw).get("hidden_size")
    except (ValueError, AttributeError, RecursionError):
        hidden = None
    dim = hidden if isinstance(hidden, int) and not isinstance(hidden, bool) and hidden > 0 else None
    return dim, digest.hexdigest()[:16]
