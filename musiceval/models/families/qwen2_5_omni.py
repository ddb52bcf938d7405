"""Qwen2.5-Omni (``qwen2_5_omni``) and Qwen3-Omni (``qwen3_omni_moe``): full checkpoints and
thinker-only ones (``qwen2_5_omni_thinker``, ``qwen3_omni_moe_thinker``).

A full Omni checkpoint also holds a talker and a speech decoder. Only text is scored, so the
talker is dropped after loading (``disable_talker``: its GPU memory is freed) and ``generate`` is
asked for text (``generation_mode="text"``); the decoding settings go to the thinker under the
``thinker_`` prefix, which the Omni ``generate`` routes to it (its own ``thinker_max_new_tokens``
default, 1024, would otherwise win over ``max_new_tokens``). A thinker-only checkpoint generates
as any other family.

Both processors insist on a video processor, and transformers' video processors need torchvision
(which has no CPU build on PyPI). Where torchvision is importable the processor is
``AutoProcessor``'s, unchanged. Where it is not, the processor is assembled from the checkpoint's
own saved parts (feature extractor, tokenizer, image processor, chat template, each through its
auto class, from the hub's ``preprocessor_config.json`` layout or transformers 5's
``processor_config.json``) with video marked unavailable: audio, text and images work; a video
input raises an error naming torchvision.
"""
from __future__ import annotations

import importlib.util
from typing import Any

from musiceval.models.families import FamilyHooks, register_family

VIDEO_NEEDS_TORCHVISION = (
    "this Omni processor was loaded without a video processor because torchvision is not installed; "
    "video inputs need it: install the torchvision build that matches your torch "
    "(https://pytorch.org/get-started/locally/) and load the model again"
)


class VideoUnavailable:
    """Stands in for the video processor where torchvision is missing: using it raises."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise ImportError(VIDEO_NEEDS_TORCHVISION)

    def __repr__(self) -> str:
        return "VideoUnavailable(torchvision is not installed)"


def torchvision_available() -> bool:
    return importlib.util.find_spec("torchvision") is not None


def processor_without_video(processor_class: Any, name: str, **hub: Any) -> Any:
    """``processor_class`` (an Omni processor) built from the saved parts of ``name``, with
    :class:`VideoUnavailable` as its video processor.

    transformers checks each part's class when a processor is built; the class of a video
    processor cannot be resolved without torchvision, so a subclass accepts the stand-in for that
    one part, checks the others as usual, and leaves the stand-in out of ``to_dict``.
    """
    from transformers import AutoFeatureExtractor, AutoImageProcessor, AutoTokenizer

    def check_argument_for_proper_class(self: Any, argument_name: str, argument: Any) -> Any:
        if argument_name == "video_processor" and isinstance(argument, VideoUnavailable):
            return VideoUnavailable
        return processor_class.check_argument_for_proper_class(self, argument_name, argument)

    def to_dict(self: Any) -> dict[str, Any]:  # repr and save: the stand-in has no config to write
        return {k: v for k, v in processor_class.to_dict(self).items() if k != "video_processor"}

    without_video = type(processor_class.__name__, (processor_class,),
                         {"check_argument_for_proper_class": check_argument_for_proper_class, "to_dict": to_dict,
                          "__module__": processor_class.__module__,
                          "__doc__": f"{processor_class.__name__} without video (torchvision is not installed)."})
    saved, _ = processor_class.get_processor_dict(name, **hub)
    return without_video(
        image_processor=AutoImageProcessor.from_pretrained(name, **hub),
        video_processor=VideoUnavailable(),
        feature_extractor=AutoFeatureExtractor.from_pretrained(name, **hub),
        tokenizer=AutoTokenizer.from_pretrained(name, **hub),
        chat_template=saved.get("chat_template"),
    )


@register_family("qwen2_5_omni_thinker")
class QwenOmniThinker(FamilyHooks):
    #: the processor class of the family (the checkpoints name it in their preprocessor config)
    processor_class: str = "Qwen2_5OmniProcessor"

    def load_processor(self, name: str, **hub: Any) -> Any:
        if torchvision_available():
            return super().load_processor(name, **hub)
        import transformers

        return processor_without_video(getattr(transformers, self.processor_class), name, **hub)


@register_family("qwen3_omni_moe_thinker")
class Qwen3OmniThinker(QwenOmniThinker):
    processor_class = "Qwen3OmniMoeProcessor"


@register_family("qwen2_5_omni")
class QwenOmni(QwenOmniThinker):
    def generate_kwargs(self, gen: dict[str, Any]) -> dict[str, Any]:
        return {"generation_mode": "text", **{f"thinker_{k}": v for k, v in gen.items()}}

    def prepare_model(self, model: Any) -> None:
        if hasattr(model, "disable_talker"):
            model.disable_talker()

    def audio_token_ids(self, processor: Any, config: Any) -> tuple[int | None, int | None]:
        return super().audio_token_ids(processor, getattr(config, "thinker_config", config))


@register_family("qwen3_omni_moe")
class Qwen3Omni(QwenOmni):
    processor_class = "Qwen3OmniMoeProcessor"
