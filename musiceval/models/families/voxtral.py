"""Voxtral (``voxtral``): the processor tokenises through ``mistral_common`` (a Tekken vocabulary),
whose chat template takes the audio itself (base64 WAV) and lays out the audio tokens, so the batch
is encoded by ``processor.apply_chat_template(tokenize=True)`` rather than ``processor(text=,
audio=)``. The processor pads audio to 30 s windows and cuts it into them itself (375 ``[AUDIO]``
tokens each), so a request may carry up to 40 minutes (:data:`MAX_AUDIO_SECONDS`). The audio token
check of the adapter applies as for other families: the Tekken file must map ``[AUDIO]`` to the
model's ``audio_token_id``. Needs ``pip install 'musiceval[voxtral]'`` (mistral-common). Checked
offline on a tiny random checkpoint with a Tekken file written by
:func:`musiceval.models.tiny.build_tiny_voxtral`, saved and loaded back through ``hf:<dir>``
(``tests/models/test_hf_families.py``).
"""
from __future__ import annotations

import importlib.util
from typing import Any, Sequence

import numpy as np

from musiceval.models.base import ModelSpecError
from musiceval.models.families import FamilyHooks, register_family


def mistral_common_available() -> bool:
    return importlib.util.find_spec("mistral_common") is not None


#: Voxtral's limit for audio understanding: 40 minutes in its 32k-token context (Mistral AI,
#: "Voxtral", arXiv:2507.13264, 2025); its processor cuts the audio into 30 s windows itself, so
#: the Whisper window of the feature extractor is not the request's limit
MAX_AUDIO_SECONDS = 40 * 60.0


@register_family("voxtral")
class Voxtral(FamilyHooks):
    def max_audio_seconds(self, processor: Any) -> float | None:
        return MAX_AUDIO_SECONDS

    def load_processor(self, name: str, **hub: Any) -> Any:
        if not mistral_common_available():  # encode() needs mistral-common's chat template and audio layout
            raise ModelSpecError(f"{name!r} is a Voxtral checkpoint: its processor tokenises through mistral-common; "
                                 "pip install 'musiceval[voxtral]'")
        return super().load_processor(name, **hub)

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
