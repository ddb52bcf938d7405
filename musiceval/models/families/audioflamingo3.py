"""Audio Flamingo 3 (``audioflamingo3``) and GLM-ASR (``glmasr``).

Their processors cut audio into 30 s windows themselves (up to ``max_audio_len``: 600 s for
AF3), so the longest request is ``max_audio_len``, not the feature extractor's window.
"""
from __future__ import annotations

from typing import Any

from musiceval.models.families import FamilyHooks, register_family


@register_family("audioflamingo3", "glmasr")
class AudioFlamingo3(FamilyHooks):
    def max_audio_seconds(self, processor: Any) -> float | None:
        return float(processor.max_audio_len)
