"""Voxtral (``voxtral``): the processor tokenises through ``mistral_common`` (a Tekken vocabulary),
whose chat template takes the audio itself (base64 WAV) and lays out the audio tokens, so the
batch is encoded by ``processor.apply_chat_template(tokenize=True)`` rather than ``processor(text=,
audio=)``. Needs ``pip install mistral-common``. Not covered by an offline test: a Tekken
tokenizer cannot be built from ``tokenizers`` (see :mod:`musiceval.models.tiny`).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from musiceval.models.families import FamilyHooks, register_family


@register_family("voxtral")
class Voxtral(FamilyHooks):
    def encode(self, processor: Any, conversations: Sequence[list[dict[str, Any]]],
               audios: Sequence[np.ndarray], sample_rate: int) -> Any:
        from musiceval.models.openai_compatible import encode_wav_base64

        pending = iter(audios)
        filled = []
        for conversation in conversations:
            turns = []
            for turn in conversation:
                content = turn["content"]
                if isinstance(content, list):
                    content = [{"type": "audio", "base64": encode_wav_base64(next(pending), sample_rate)}
                               if part.get("type") == "audio" else part for part in content]
                turns.append({**turn, "content": content})
            filled.append(turns)
        return processor.apply_chat_template(filled, tokenize=True, return_dict=True, return_tensors="pt",
                                             processor_kwargs={"padding": True, "padding_side": "left"})

    def audio_token_ids(self, processor: Any, config: Any) -> tuple[int | None, int | None]:
        return None, None  # mistral_common owns the audio token layout
