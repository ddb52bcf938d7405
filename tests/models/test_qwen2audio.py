"""hf: adapter on a tiny randomly initialised Qwen2-Audio saved to disk and loaded back.

The tiny checkpoint goes through the real path: AutoProcessor (Whisper features, tokenizer with
<|audio_bos|>/<|AUDIO|>/<|audio_eos|>, chat template), from_pretrained, generate, batch_decode.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")

from musiceval.models import GenerationSettings, ModelSpecError, Request, load_model  # noqa: E402
from musiceval.models.qwen2audio import build_tiny_checkpoint  # noqa: E402

GREEDY = GenerationSettings(temperature=0.0, max_tokens=6, seed=0)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-qwen2-audio"))


@pytest.fixture(scope="module")
def model(tiny_dir):
    m = load_model(f"hf:{tiny_dir}", batch_size=2, num_threads=1)
    yield m
    m.close()


def clip(seconds: float, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(int(seconds * 16_000)) * 0.1).astype(np.float32)


def prompt_text(model, request: Request) -> str:
    """The chat template's text for one request, as the adapter renders it before tokenising."""
    return model.processor.apply_chat_template(model._conversation(request), add_generation_prompt=True, tokenize=False)


def test_the_tiny_checkpoint_loads_through_the_real_processor_and_chat_template(model):
    import torch

    default = "cuda" if torch.cuda.is_available() else "cpu"  # the adapter's default device
    assert model.sample_rate == 16_000 and model.max_audio_seconds == 5.0 and model.device == default
    text = prompt_text(model, Request("i", "What key?", clip(1)))
    assert "<|audio_bos|><|AUDIO|><|audio_eos|>" in text and text.endswith("<|im_start|>assistant\n")
    assert "<|AUDIO|>" not in prompt_text(model, Request("i", "What key?", None))
    inputs = model.processor(text=[text], audio=[clip(2)], sampling_rate=16_000, return_tensors="pt")
    n_audio = int((inputs["input_ids"] == model.model.config.audio_token_id).sum())
    assert n_audio == 50  # one audio token per 40 ms of the 2 s clip


def test_a_mixed_batch_gets_one_text_answer_per_request(model):
    batch = [Request("a", "What key?", clip(2, 1)), Request("b", "Describe the music.", None),
             Request("c", "What tempo?", clip(1, 2))]
    answers = model.generate(batch, GREEDY)
    assert len(answers) == 3 and all(a.ok and isinstance(a.text, str) for a in answers)


def test_greedy_and_seeded_sampling_are_reproducible(model):
    batch = [Request("a", "What key?", clip(2, 1))]
    assert model.generate(batch, GREEDY)[0].text == model.generate(batch, GREEDY)[0].text
    sampled = GenerationSettings(temperature=1.0, max_tokens=6, seed=3)
    assert model.generate(batch, sampled)[0].text == model.generate(batch, sampled)[0].text


def test_one_malformed_request_fails_alone(model):
    batch = [Request("ok", "What key?", clip(1)), Request("bad", "What key?", np.zeros((2, 2, 2), np.float32))]
    ok, bad = model.generate(batch, GREEDY)
    assert ok.ok and not bad.ok and bad.error


def test_a_tokenizer_that_does_not_match_the_model_is_refused(tiny_dir, tmp_path):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(tiny_dir, broken)
    config = json.loads((broken / "config.json").read_text())
    config["audio_token_index"] = 1
    (broken / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelSpecError, match="tokenizer"):
        load_model(f"hf:{broken}")


def test_chunks_longer_than_the_feature_window_are_refused(tiny_dir):
    with pytest.raises(ModelSpecError, match="chunk_seconds"):
        load_model(f"hf:{tiny_dir}", chunk_seconds=60)


def test_a_missing_checkpoint_names_the_download_command(tmp_path):
    with pytest.raises(ModelSpecError, match="huggingface-cli download"):
        load_model(f"hf:{tmp_path / 'absent'}")


def test_no_checkpoint_is_ever_unpickled_without_weights_only():
    root = Path(__file__).resolve().parents[2] / "musiceval"
    for path in root.rglob("*.py"):
        for call in re.findall(r"torch\.load\([^)]*\)", path.read_text()):
            assert "weights_only=True" in call, f"{path}: {call}"


@pytest.mark.gpu
def test_on_cuda_the_model_runs_in_bf16_and_close_returns_the_memory(tiny_dir):
    import torch

    model = load_model(f"hf:{tiny_dir}")
    assert model.device == "cuda" and model.model.dtype == torch.bfloat16
    (answer,) = model.generate([Request("a", "What key?", clip(1))], GREEDY)
    assert answer.ok
    weights = sum(p.numel() * p.element_size() for p in model.model.parameters())
    loaded = torch.cuda.memory_allocated()
    model.close()
    assert torch.cuda.memory_allocated() <= loaded - weights
