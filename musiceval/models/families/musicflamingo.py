"""Music Flamingo (``musicflamingo``): AF3's encoder with rotary time embeddings; the processor
wraps each clip in ``<|sound_bos|>``/``<|sound_eos|>`` itself and windows up to ``max_audio_len``
(1200 s), so the chat template holds only ``<sound>``."""
from __future__ import annotations

from typing import Any

from musiceval.models.families import FamilyHooks, register_family


@register_family("musicflamingo")
class MusicFlamingo(FamilyHooks):
    def max_audio_seconds(self, processor: Any) -> float | None:
        return float(processor.max_audio_len)
