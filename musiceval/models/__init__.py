"""Music LM adapters behind ``--model MODEL_SPEC`` and the resumable response cache.

See :mod:`musiceval.models.base` for the protocol and how to register your own adapter.
"""
from musiceval.models.base import (
    Answer,
    GenerationSettings,
    ModelSpecError,
    MusicLM,
    Request,
    load_model,
    register_model,
    registered_prefixes,
)
from musiceval.models.args import parse_model_args, split_model_args

__all__ = [
    "Answer",
    "GenerationSettings",
    "ModelSpecError",
    "MusicLM",
    "Request",
    "load_model",
    "register_model",
    "registered_prefixes",
    "parse_model_args",
    "split_model_args",
]
