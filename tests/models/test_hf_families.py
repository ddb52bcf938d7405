"""The generic hf: adapter on tiny random checkpoints of several transformers families.

Each checkpoint is built offline (musiceval.models.tiny), saved, and loaded back through
``load_model("hf:<dir>")``: AutoConfig, AutoProcessor, the family's class, the chat template with
an audio part, left-padded batches, generate, batch_decode. Model arguments are asserted where
they land: ``from_pretrained``'s keyword arguments and ``generate``'s.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

pytest.importorskip("transformers")

from musiceval.models import GenerationSettings, ModelSpecError, Request, load_model  # noqa: E402
from musiceval.models.args import split_model_args  # noqa: E402
from musiceval.models.families import FamilyHooks, family_for, registered_families  # noqa: E402
from musiceval.models.tiny import TINY_BUILDERS, build_tiny  # noqa: E402

GREEDY = GenerationSettings(temperature=0.0, max_tokens=4, seed=0)
TORCHVISION = importlib.util.find_spec("torchvision") is not None
# Voxtral tokenises through mistral-common (a Tekken file the builder writes)
VOXTRAL = pytest.param("voxtral", marks=pytest.mark.skipif(
    importlib.util.find_spec("mistral_common") is None,
    reason="Voxtral's processor needs mistral-common: pip install 'musiceval[voxtral]'"))
FAMILIES = ["qwen2_audio", "audioflamingo3", "musicflamingo", "glmasr", "qwen2_5_omni_thinker", "qwen3_omni_moe_thinker",
            VOXTRAL]


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory):
    """Build each family's tiny checkpoint once per session, lazily."""
    root = tmp_path_factory.mktemp("tiny-families")
    built = {}

    def get(family: str):
        if family not in built:
            built[family] = build_tiny(family, root / family)
        return built[family]

    return get


def clip(seconds: float, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(int(seconds * 16_000)) * 0.1).astype(np.float32)


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_answers_a_prompt_with_audio_through_hf(tiny_checkpoints, family):
    model = load_model(f"hf:{tiny_checkpoints(family)}", device="cpu", batch_size=3, num_threads=1)
    try:
        assert model.model_type == family and model.sample_rate == 16_000
        batch = [Request("a", "what is the music ?", clip(2, 1)), Request("b", "describe it .", clip(1, 2)),
                 Request("c", "describe the piece .", None)]
        answers = model.generate(batch, GREEDY)
        assert [a.ok for a in answers] == [True, True, True], [a.error for a in answers]
        assert all(isinstance(a.text, str) and a.meta["model_type"] == family for a in answers)
        # the audio reached the model as audio tokens: the processor expanded the placeholder
        inputs = model.family.encode(model.processor, [model._conversation(batch[0])], [batch[0].audio], 16_000)
        audio_id, expected = model.family.audio_token_ids(model.processor, model.model.config)
        assert audio_id is not None and audio_id == expected
        assert int((inputs["input_ids"] == audio_id).sum()) > 1
        assert inputs["attention_mask"].shape[0] == 1
        text_only = model.family.encode(model.processor, [model._conversation(batch[2])], [], 16_000)
        assert int((text_only["input_ids"] == audio_id).sum()) == 0
    finally:
        model.close()


def test_every_built_family_has_a_tiny_builder_or_a_reason():
    assert {"qwen2_audio", "audioflamingo3", "musicflamingo", "glmasr", "qwen2_5_omni_thinker",
            "qwen3_omni_moe_thinker", "voxtral"} <= set(TINY_BUILDERS)
    assert {"audioflamingo3", "musicflamingo", "voxtral", "qwen2_5_omni",
            "qwen2_5_omni_thinker"} <= set(registered_families())
    assert type(family_for("qwen2_audio")) is FamilyHooks  # no quirks: the defaults


def test_batches_are_left_padded_and_answer_like_single_requests(tiny_checkpoints):
    model = load_model(f"hf:{tiny_checkpoints('qwen2_audio')}", device="cpu", batch_size=2, num_threads=1)
    try:
        batch = [Request("a", "what is the music ?", clip(2, 1)), Request("b", "describe it .", None)]
        inputs = model.family.encode(model.processor, [model._conversation(r) for r in batch], [batch[0].audio], 16_000)
        assert inputs["attention_mask"][1, 0] == 0 and inputs["attention_mask"][1, -1] == 1  # padding on the left
        together = [a.text for a in model.generate(batch, GREEDY)]
        alone = [model.generate([r], GREEDY)[0].text for r in batch]
        # a random tiny model's top logits can tie within float noise, and padding changes the
        # summation order: the texts must agree unless greedy decoding met such a tie
        tied = _greedy_agrees_up_to_ties(model, batch)
        assert together == alone or tied, (together, alone)
    finally:
        model.close()


def _greedy_steps(model, requests):
    """The new tokens and per-step scores of greedy ``generate``, built as the adapter builds a batch."""
    import torch

    audios = [r.audio for r in requests if r.audio is not None]
    inputs = model.family.encode(model.processor, [model._conversation(r) for r in requests], audios, 16_000)
    with torch.inference_mode():
        out = model.model.generate(**inputs, **model.generate_kwargs(GREEDY), output_scores=True,
                                   return_dict_in_generate=True)
    return out.sequences[:, inputs["input_ids"].shape[1]:], torch.stack(out.scores, 1).float()


def _greedy_agrees_up_to_ties(model, batch, atol: float = 1e-4) -> bool:
    """Step by step, batched and single decoding give equal scores (within ``atol``) and equal tokens,
    until a step whose top two scores are within ``atol`` (a tie either may break): True if such a
    tie was met, False if the decodings agree throughout; anything else fails."""
    tokens, scores = _greedy_steps(model, batch)
    tied = False
    for k, request in enumerate(batch):
        one_tokens, one_scores = _greedy_steps(model, [request])
        for step in range(min(one_tokens.shape[1], tokens.shape[1])):
            np.testing.assert_allclose(scores[k, step].numpy(), one_scores[0, step].numpy(), atol=atol, rtol=0)
            if tokens[k, step] != one_tokens[0, step]:
                top2 = one_scores[0, step].topk(2).values
                assert float(top2[0] - top2[1]) < 2 * atol, f"request {k}, step {step}: tokens differ without a tie"
                tied = True
                break
    return tied


def test_flamingo_audio_limit_is_the_processors_window_count(tiny_checkpoints):
    model = load_model(f"hf:{tiny_checkpoints('audioflamingo3')}", device="cpu", chunk_seconds="max")
    try:
        assert model.max_audio_seconds == 20.0 and model.chunk_seconds == 20.0  # 4 windows of 5 s
        (answer,) = model.generate([Request("long", "what is it ?", clip(12, 3))], GREEDY)
        assert answer.ok
    finally:
        model.close()


def test_model_args_reach_from_pretrained_and_generate(tiny_checkpoints, monkeypatch):
    import torch
    import transformers

    calls = []
    cls = transformers.Qwen2AudioForConditionalGeneration
    original = cls.from_pretrained.__func__

    def spy(klass, name, *args, **kwargs):
        calls.append(kwargs)
        return original(klass, name, *args, **kwargs)

    monkeypatch.setattr(cls, "from_pretrained", classmethod(spy))
    load, settings = split_model_args({"dtype": "bfloat16", "attn_implementation": "eager", "device": "cpu",
                                       "max_new_tokens": 3, "temperature": 0.7, "do_sample": False, "seed": 5})
    model = load_model(f"hf:{tiny_checkpoints('qwen2_audio')}", **load)
    try:
        assert calls == []  # the weights load at first use
        assert model.model.dtype == torch.bfloat16
        assert calls == [{"dtype": torch.bfloat16, "trust_remote_code": False, "attn_implementation": "eager"}]
        assert model.model.config._attn_implementation == "eager"
        seen = []
        generate = model.model.generate
        monkeypatch.setattr(model.model, "generate", lambda **kw: seen.append(kw) or generate(**kw))
        (answer,) = model.generate([Request("a", "what is it ?", clip(1))], settings)
        assert answer.ok
        assert {k: seen[0][k] for k in ("max_new_tokens", "do_sample")} == {"max_new_tokens": 3, "do_sample": False}
        assert "temperature" not in seen[0]  # greedy: do_sample=false wins over temperature 0.7
        assert seen[0]["input_features"].dtype == torch.bfloat16
    finally:
        model.close()


def test_a_run_answered_from_the_response_cache_never_loads_the_weights(tiny_checkpoints, tmp_path):
    import soundfile as sf

    from musiceval.generate import generate_responses
    from musiceval.models.cache import ResponseCache
    from musiceval.records import Item

    sf.write(tmp_path / "a.wav", clip(1), 16_000, subtype="FLOAT")
    items = [Item(id=f"q{k}", question=f"what is {k} ?", audio="a.wav") for k in range(3)]
    runs = []
    for _ in range(2):
        model = load_model(f"hf:{tiny_checkpoints('qwen2_audio')}", device="cpu")
        try:
            result = generate_responses(model, items, conditions=["correct"], data_dir=tmp_path,
                                        cache=ResponseCache(tmp_path / "cache"), settings=GREEDY)
            runs.append((result.n_generated, result.n_cached, model._model is not None))
        finally:
            model.close()
    assert runs == [(3, 0, True), (0, 3, False)]


def test_a_checkpoint_without_weights_fails_the_call_by_name_not_each_request(tiny_checkpoints, tmp_path):
    import shutil

    broken = tmp_path / "no-weights"
    shutil.copytree(tiny_checkpoints("qwen2_audio"), broken)
    for f in broken.glob("*.safetensors"):
        f.unlink()
    model = load_model(f"hf:{broken}", device="cpu")
    with pytest.raises(ModelSpecError, match="cannot load"):
        model.generate([Request("a", "what is it ?", clip(1))], GREEDY)


def test_trust_remote_code_is_off_unless_asked(tiny_checkpoints):
    model = load_model(f"hf:{tiny_checkpoints('glmasr')}", device="cpu")
    try:
        assert model.load_kwargs["trust_remote_code"] is False
        assert type(model.model).__name__ == "GlmAsrForConditionalGeneration"  # not in the auto mapping
    finally:
        model.close()


def test_an_unknown_dtype_is_refused_with_the_choices(tiny_checkpoints):
    with pytest.raises(ModelSpecError, match="bfloat16"):
        load_model(f"hf:{tiny_checkpoints('qwen2_audio')}", dtype="int3")


def test_full_omni_checkpoints_generate_text_only_with_settings_routed_to_the_thinker():
    omni = family_for("qwen2_5_omni")
    gen = {"max_new_tokens": 8, "do_sample": False}
    assert omni.generate_kwargs(gen) == {"generation_mode": "text", "thinker_max_new_tokens": 8,
                                         "thinker_do_sample": False}
    assert family_for("qwen2_5_omni_thinker").generate_kwargs(gen) == gen  # the thinker alone: unchanged

    class Full:
        has_talker, talker = True, object()

        def disable_talker(self):
            del Full.talker
            self.has_talker = False

    model = Full()
    omni.prepare_model(model)
    assert model.has_talker is False and not hasattr(model, "talker")


@pytest.mark.skipif(TORCHVISION, reason="torchvision installed: the Omni processor loads through AutoProcessor")
@pytest.mark.parametrize("family, processor_class, video_text", [
    ("qwen2_5_omni_thinker", "Qwen2_5OmniProcessor", "<|vision_bos|><|VIDEO|><|vision_eos|>"),
    ("qwen3_omni_moe_thinker", "Qwen3OmniMoeProcessor", "<|vision_start|><|video_pad|><|vision_end|>"),
])
def test_omni_thinker_loads_from_disk_without_torchvision_with_video_marked_unavailable(
        tiny_checkpoints, family, processor_class, video_text):
    """The checkpoint holds the hub's processor files (preprocessor_config.json, chat_template.json,
    tokenizer); without torchvision the family builds the processor from them, video unavailable."""
    from musiceval.models.families.qwen2_5_omni import VideoUnavailable

    directory = tiny_checkpoints(family)
    assert (directory / "preprocessor_config.json").exists() and (directory / "chat_template.json").exists()
    model = load_model(f"hf:{directory}", device="cpu", num_threads=1)
    try:
        processor = model.processor
        assert type(processor).__name__ == processor_class
        assert isinstance(processor.video_processor, VideoUnavailable)
        assert processor.feature_extractor.chunk_length == 5 and processor.chat_template  # the saved parts
        assert model.max_audio_seconds == 5.0
        with pytest.raises(ImportError, match="torchvision"):
            processor(text=[video_text], videos=[np.zeros((2, 3, 28, 28), np.uint8)])
        assert "video_processor: VideoUnavailable(torchvision is not installed)" in repr(processor)
    finally:
        model.close()


@pytest.mark.skipif(TORCHVISION, reason="torchvision installed: the Omni processor loads through AutoProcessor")
def test_omni_thinker_without_torchvision_also_reads_the_transformers_5_processor_layout(tiny_checkpoints, tmp_path):
    """What ``save_pretrained`` of transformers 5 writes (processor_config.json with one entry per
    part, chat_template.jinja) loads the same way; the saved values are the ones used."""
    import json
    import shutil

    source = tiny_checkpoints("qwen2_5_omni_thinker")
    for name in ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                 "tokenizer_config.json"):
        shutil.copy(source / name, tmp_path / name)
    flat = json.loads((source / "preprocessor_config.json").read_text())
    image_keys = ("image", "do_", "merge", "patch", "temporal", "resample", "rescale", "size")
    image = {k: v for k, v in flat.items() if k.startswith(image_keys)}
    audio = {k: v for k, v in flat.items() if k not in image and k != "processor_class"}
    (tmp_path / "processor_config.json").write_text(json.dumps({
        "feature_extractor": {**audio, "chunk_length": 4}, "image_processor": image,
        "video_processor": {"video_processor_type": "Qwen2VLVideoProcessor"},
        "processor_class": "Qwen2_5OmniProcessor"}))
    template = json.loads((source / "chat_template.json").read_text())["chat_template"]
    (tmp_path / "chat_template.jinja").write_text(template)
    model = load_model(f"hf:{tmp_path}", device="cpu", num_threads=1)
    try:
        assert model.processor.feature_extractor.chunk_length == 4 and model.max_audio_seconds == 4.0
        (answer,) = model.generate([Request("a", "what is it ?", clip(1))], GREEDY)
        assert answer.ok, answer.error
    finally:
        model.close()


def test_voxtral_without_mistral_common_names_the_extra(monkeypatch):
    import musiceval.models.families.voxtral as voxtral

    monkeypatch.setattr(voxtral, "mistral_common_available", lambda: False)
    with pytest.raises(ModelSpecError, match=r"pip install 'musiceval\[voxtral\]'"):
        family_for("voxtral").load_processor("some/voxtral")


@pytest.mark.skipif(importlib.util.find_spec("mistral_common") is None,
                    reason="Voxtral's processor needs mistral-common: pip install 'musiceval[voxtral]'")
def test_voxtral_takes_audio_longer_than_one_window_as_several_windows(tiny_checkpoints):
    """Voxtral's processor windows audio itself (30 s, 375 [AUDIO] tokens each), so the request
    limit is the model's (40 min), not the Whisper window: 40 s reaches the model as two windows."""
    model = load_model(f"hf:{tiny_checkpoints('voxtral')}", device="cpu", batch_size=1, num_threads=1)
    try:
        assert model.max_audio_seconds == 2400.0 and model.chunk_seconds is None
        audio_id, _ = model.family.audio_token_ids(model.processor, model.model.config)
        counts = []
        for seconds in (20, 40):
            request = Request("a", "what is the music ?", clip(seconds, 3))
            inputs = model.family.encode(model.processor, [model._conversation(request)], [request.audio], 16_000)
            counts.append(int((inputs["input_ids"] == audio_id).sum()))
        assert counts == [375, 750]
    finally:
        model.close()
