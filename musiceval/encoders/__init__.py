"""Text encoders used inside metrics (CLAPText, sentence cosine, CMI-Bench tagging, triplets).

Every encoder implements :class:`musiceval.encoders.base.TextEncoder`; :func:`load_text_encoder`
resolves a user-facing name (``minilm``, a sentence-transformers directory or hub id, ``clap:...``).
"""
from musiceval.encoders.base import (
    TextEncoder,
    embed_audio,
    embed_by_length,
    embed_distinct,
    load_text_encoder,
    register_encoder,
)
from musiceval.encoders.embedding_cache import EmbeddingCache
from musiceval.encoders.lazy import LazyEncoder

__all__ = ["EmbeddingCache", "LazyEncoder", "TextEncoder", "embed_audio", "embed_by_length", "embed_distinct", "register_encoder", "load_text_encoder"]
