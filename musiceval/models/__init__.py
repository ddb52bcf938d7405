"""Music LM adapters behind ``--model SPEC`` and the resumable response cache.

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

__all__ = [
    "Answer",
    "GenerationSettings",
    "ModelSpecError",
    "MusicLM",
    "Request",
    "load_model",
    "register_model",
    "registered_prefixes",
]
