"""Per-family quirks of the generic ``hf:`` adapter, registered by ``config.model_type``.

The adapter (:mod:`musiceval.models.hf`) does the common work: ``AutoConfig``, ``AutoProcessor``
(:meth:`FamilyHooks.load_processor`), the model class, the chat template with an audio part,
left-padded batches, decoding. A family
whose checkpoints need something else subclasses :class:`FamilyHooks`, overrides only that, and
registers it in its own module here (one file per family)::

    @register_family("my_model_type")
    class MyFamily(FamilyHooks):
        def max_audio_seconds(self, processor):
            return 120.0

Model types without a registered family use :class:`FamilyHooks` itself, which fits checkpoints
whose processor takes ``text=`` with the chat template's audio placeholder and ``audio=`` with
the waveforms (Qwen2-Audio, GLM-ASR and most Whisper-encoder audio LMs).
"""
from __future__ import annotations

import pkgutil
from typing import Any, Callable, Sequence

import numpy as np

from musiceval.registry import Registry

__all__ = ["FAMILIES", "FamilyHooks", "register_family", "family_for", "registered_families"]

#: family hooks by ``config.model_type``; every module of this package registers its own
FAMILIES: Registry[type["FamilyHooks"]] = Registry(
    "model family", builtin_modules=tuple(f"{__name__}.{m.name}" for m in pkgutil.iter_modules(__path__)),
    entry_point_group="musiceval.families")


class FamilyHooks:
    """Defaults for one architecture family; override what differs."""

    #: transformers class name to load, when ``AutoModelForMultimodalLM`` does not map the type
    #: to the class that answers with text (None: the auto class, else ``config.architectures[0]``)
    model_class: str | None = None

    def load_processor(self, name: str, **hub: Any) -> Any:
        """The checkpoint's processor: ``AutoProcessor.from_pretrained(name, **hub)`` (``hub``:
        ``revision``, ``trust_remote_code``)."""
        from transformers import AutoProcessor

        return AutoProcessor.from_pretrained(name, **hub)

    def audio_part(self) -> dict[str, Any]:
        """The chat-template content part that stands for one audio input."""
        return {"type": "audio"}

    def max_audio_seconds(self, processor: Any) -> float | None:
        """Longest audio one request may carry: the processor's ``max_audio_len`` when it chunks
        audio itself, else the feature extractor's window (Whisper: ``chunk_length``, 30 s)."""
        fe = getattr(processor, "feature_extractor", None)
        window = getattr(fe, "chunk_length", None)
        return float(window) if window else None

    def encode(self, processor: Any, conversations: Sequence[list[dict[str, Any]]],
               audios: Sequence[np.ndarray], sample_rate: int) -> Any:
        """Tokenise a batch: the chat template as text, then ``processor(text=, audio=)``, left-padded."""
        texts = [processor.apply_chat_template(c, add_generation_prompt=True, tokenize=False) for c in conversations]
        kwargs: dict[str, Any] = {"text": texts, "return_tensors": "pt",
                                  "text_kwargs": {"padding": True, "padding_side": "left"}}
        if audios:
            kwargs.update(audio=list(audios), sampling_rate=sample_rate)
        return processor(**kwargs)

    def generate_kwargs(self, gen: dict[str, Any]) -> dict[str, Any]:
        """``model.generate``'s keyword arguments, from the common ones (``max_new_tokens``,
        ``do_sample``, ``temperature``)."""
        return gen

    def prepare_model(self, model: Any) -> None:
        """Adjust a loaded model before use (default: nothing)."""

    def audio_token_ids(self, processor: Any, config: Any) -> tuple[int | None, int | None]:
        """``(tokenizer's id of the audio token, the id the model expects)``; None when unknown."""
        token = getattr(processor, "audio_token", None)
        expected = getattr(config, "audio_token_id", None)
        if expected is None:
            expected = getattr(config, "audio_token_index", None)
        if token is None or expected is None:
            return None, None
        return processor.tokenizer.convert_tokens_to_ids(token), int(expected)


def register_family(*model_types: str) -> Callable[[type[FamilyHooks]], type[FamilyHooks]]:
    """Register hooks for one or more ``config.model_type`` values."""
    def decorator(cls: type[FamilyHooks]) -> type[FamilyHooks]:
        for model_type in model_types:
            FAMILIES.register(model_type, cls, replace=True)
        return cls

    return decorator


def registered_families() -> list[str]:
    return sorted(FAMILIES.names())


def family_for(model_type: str) -> FamilyHooks:
    """The hooks registered for ``model_type``, else the defaults."""
    return (FAMILIES.get(model_type) if model_type in FAMILIES else FamilyHooks)()
