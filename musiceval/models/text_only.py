"""``text-only:<inner spec>``: the language-prior baseline.

The inner model answers every request with its audio removed (``text-only:``) or replaced by
digital silence of the same length (``text-only-silence:``), so a gate can ask whether the model
beats what it says without listening. Examples: ``text-only:hf:Qwen/Qwen2-Audio-7B-Instruct``,
``text-only-silence:openai-compatible:http://localhost:8000/v1#qwen2-audio``.

The same baseline is available as the ``text_only`` condition of ``musiceval generate`` on the
plain model; the wrapper exists so that any gate comparing two ``--model`` specs can use it.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from musiceval.audio import silence_like
from musiceval.models.base import Answer, GenerationSettings, ModelSpecError, Request, adapter_repr, load_model, register_model

__all__ = ["TextOnlyModel"]


class TextOnlyModel:
    def __init__(self, rest: str, *, silence: bool = False, **options: Any) -> None:
        prefix = "text-only-silence" if silence else "text-only"
        if not rest:
            raise ModelSpecError(f"{prefix} needs an inner model: {prefix}:<spec>, e.g. {prefix}:hf:<dir>")
        self.inner = load_model(rest, **options)
        self.silence = silence
        self.spec = f"{prefix}:{self.inner.spec}"
        self.revision = self.inner.revision
        self.sample_rate = self.inner.sample_rate
        self.max_audio_seconds = self.inner.max_audio_seconds
        self.chunk_seconds = self.inner.chunk_seconds

    def _strip(self, request: Request) -> Request:
        if request.audio is None:
            return request
        return replace(request, audio=silence_like(request.audio) if self.silence else None)

    def generate(self, requests: Sequence[Request], settings: GenerationSettings) -> list[Answer]:
        return self.inner.generate([self._strip(r) for r in requests], settings)

    __repr__ = adapter_repr  # never the spec's credentials

    def close(self) -> None:
        self.inner.close()


@register_model("text-only")
def _text_only(rest: str, **options: Any) -> TextOnlyModel:
    return TextOnlyModel(rest, silence=False, **options)


@register_model("text-only-silence")
def _text_only_silence(rest: str, **options: Any) -> TextOnlyModel:
    return TextOnlyModel(rest, silence=True, **options)
