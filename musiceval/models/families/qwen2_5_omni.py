"""Qwen2.5-Omni (``qwen2_5_omni``) and Qwen3-Omni (``qwen3_omni_moe``) full checkpoints.

A full Omni checkpoint also holds a talker and a speech decoder. Only text is scored, so the
talker is dropped after loading (``disable_talker``: its GPU memory is freed) and ``generate`` is
asked for text (``generation_mode="text"``); the decoding settings go to the thinker under the
``thinker_`` prefix, which the Omni ``generate`` routes to it (its own ``thinker_max_new_tokens``
default, 1024, would otherwise win over ``max_new_tokens``). A thinker-only checkpoint
(``qwen2_5_omni_thinker``, ``qwen3_omni_moe_thinker``) needs nothing special.
"""
from __future__ import annotations

from typing import Any

from musiceval.models.families import FamilyHooks, register_family


@register_family("qwen2_5_omni", "qwen3_omni_moe")
class QwenOmni(FamilyHooks):
    def generate_kwargs(self, gen: dict[str, Any]) -> dict[str, Any]:
        return {"generation_mode": "text", **{f"thinker_{k}": v for k, v in gen.items()}}

    def prepare_model(self, model: Any) -> None:
        if hasattr(model, "disable_talker"):
            model.disable_talker()

    def audio_token_ids(self, processor: Any, config: Any) -> tuple[int | None, int | None]:
        return super().audio_token_ids(processor, getattr(config, "thinker_config", config))
