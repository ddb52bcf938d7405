"""Qwen2.5-Omni (``qwen2_5_omni``, ``qwen2_5_omni_thinker``) and Qwen3-Omni (``qwen3_omni_moe``).

A full Omni checkpoint also holds a talker and a speech decoder; ``generate`` would synthesise
speech unless told not to. Only text is scored, so the full model is asked for text only. A
thinker-only checkpoint (``qwen2_5_omni_thinker``) needs nothing special.
"""
from __future__ import annotations

from typing import Any

from musiceval.models.families import FamilyHooks, register_family


@register_family("qwen2_5_omni", "qwen3_omni_moe")
class QwenOmni(FamilyHooks):
    def generate_kwargs(self) -> dict[str, Any]:
        return {"return_audio": False}

    def audio_token_ids(self, processor: Any, config: Any) -> tuple[int | None, int | None]:
        return super().audio_token_ids(processor, getattr(config, "thinker_config", config))
