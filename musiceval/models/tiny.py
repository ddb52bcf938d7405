"""Tiny, randomly initialised audio LMs of several transformers families, built offline.

Each builder writes a checkpoint (``config.json``, safetensors weights, processor and tokenizer
files, chat template) that loads back through ``--model hf:<dir>`` exactly as a hub checkpoint
does: ``AutoConfig``, ``AutoProcessor``, the family's model class, ``generate``. Weights are
random and the vocabulary is a few dozen words, so answers are noise: they check plumbing (audio
tokens expanded, features of the right shape, batching, decoding), never a score.

Tokenizers are ``tokenizers`` word-level models with the family's special tokens, wrapped in
``PreTrainedTokenizerFast``; nothing is downloaded. ``python -m musiceval.models.tiny FAMILY DIR``.

The Qwen2.5-Omni and Qwen3-Omni thinkers are saved in the hub checkpoints' layout (one ``preprocessor_config.json``
for feature extractor and image processor, ``chat_template.json``): its processor object insists
on a video processor, which needs torchvision, so the files are written part by part and the
processor is built when the checkpoint is loaded (with torchvision by ``AutoProcessor``, without
it by :mod:`musiceval.models.families.qwen2_5_omni`, video unavailable).

Voxtral's processor delegates the chat template and the audio token layout to mistral_common (a
Tekken vocabulary file, read through transformers' ``MistralCommonBackend``): its builder writes a
``tekken.json`` of 256 byte tokens and Mistral's special tokens (:func:`write_tekken`), so its
random answers are arbitrary bytes rather than words. Needs ``pip install 'musiceval[voxtral]'``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

__all__ = ["TINY_BUILDERS", "build_tiny", "chatml_template", "write_tekken"]

# no instrument, key, note or number words: random answers cannot hit a fixture's truth
_WORDS = ("system user assistant You are a helpful Audio the music is in this piece sound of it "
          "what which describe , . ?").split()


def chatml_template(audio_text: str) -> str:
    """A ChatML (Qwen-style) chat template rendering an ``{"type": "audio"}`` part as ``audio_text``."""
    return (
        "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
        "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
        "{% for part in message['content'] %}{% if part['type'] == 'audio' %}" + audio_text +
        "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
        "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )


def _tokenizer(special: list[str], **named: str) -> tuple[Any, dict[str, int]]:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    base = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    vocab = {t: i for i, t in enumerate(base + special + ["[UNK]"] + _WORDS)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    extra = {"extra_special_tokens": named} if named else {}
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="[UNK]", pad_token="<|endoftext|>", eos_token="<|im_end|>",
        additional_special_tokens=base[1:] + special, **extra,
    )
    return tokenizer, vocab


def _text_config(cls: Any, vocab: dict[str, int], **extra: Any) -> dict:
    return cls(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
               num_key_value_heads=1, intermediate_size=64, max_position_embeddings=4096, **extra).to_dict()


def _save(model: Any, processor: Any | None, vocab: dict[str, int], directory: str | Path) -> Path:
    model.generation_config.pad_token_id = vocab["<|endoftext|>"]
    model.generation_config.eos_token_id = vocab["<|im_end|>"]
    directory = Path(directory)
    model.save_pretrained(directory)
    if processor is not None:
        processor.save_pretrained(directory)
    return directory


def build_tiny_qwen2_audio(directory: str | Path, *, seed: int = 0) -> Path:
    """Qwen2-Audio (``qwen2_audio``): Whisper features in a 5 s window, ``<|AUDIO|>`` tokens."""
    import torch
    from transformers import (Qwen2AudioConfig, Qwen2AudioEncoderConfig, Qwen2AudioForConditionalGeneration,
                              Qwen2AudioProcessor, Qwen2Config, WhisperFeatureExtractor)

    tokenizer, vocab = _tokenizer(["<|audio_bos|>", "<|AUDIO|>", "<|audio_eos|>"])
    processor = Qwen2AudioProcessor(
        # a 5 s window (the real model's is 30 s) keeps CPU feature extraction fast
        feature_extractor=WhisperFeatureExtractor(feature_size=128, sampling_rate=16_000, chunk_length=5),
        tokenizer=tokenizer,
        chat_template=Qwen2AudioProcessor.default_chat_template.fget(None),  # Qwen2-Audio-Instruct's
    )
    config = Qwen2AudioConfig(
        audio_config=Qwen2AudioEncoderConfig(
            d_model=16, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32, num_mel_bins=128,
            max_source_positions=250,  # 500 mel frames = the 5 s window
        ).to_dict(),
        text_config=_text_config(Qwen2Config, vocab),
        audio_token_index=vocab["<|AUDIO|>"],
    )
    torch.manual_seed(seed)
    return _save(Qwen2AudioForConditionalGeneration(config), processor, vocab, directory)


def build_tiny_qwen2_5_omni_thinker(directory: str | Path, *, seed: int = 0) -> Path:
    """Qwen2.5-Omni's thinker (``qwen2_5_omni_thinker``): audio, vision and text towers, M-RoPE."""
    import torch
    from transformers import Qwen2_5OmniThinkerConfig, Qwen2_5OmniThinkerForConditionalGeneration
    from transformers.models.qwen2_5_omni.configuration_qwen2_5_omni import (
        Qwen2_5OmniAudioEncoderConfig, Qwen2_5OmniTextConfig, Qwen2_5OmniVisionEncoderConfig)

    named = {"audio_token": "<|AUDIO|>", "image_token": "<|IMAGE|>", "video_token": "<|VIDEO|>",
             "audio_bos_token": "<|audio_bos|>", "audio_eos_token": "<|audio_eos|>",
             "vision_bos_token": "<|vision_bos|>", "vision_eos_token": "<|vision_eos|>"}
    tokenizer, vocab = _tokenizer(list(named.values()), **named)
    text = _text_config(Qwen2_5OmniTextConfig, vocab,
                        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]})
    config = Qwen2_5OmniThinkerConfig(
        audio_config=Qwen2_5OmniAudioEncoderConfig(
            d_model=16, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32, num_mel_bins=128,
            max_source_positions=250, n_window=50, output_dim=32).to_dict(),
        vision_config=Qwen2_5OmniVisionEncoderConfig(
            depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=32,
            fullatt_block_indexes=[0]).to_dict(),
        text_config=text,
        audio_token_index=vocab["<|AUDIO|>"], image_token_index=vocab["<|IMAGE|>"],
        video_token_index=vocab["<|VIDEO|>"], audio_start_token_id=vocab["<|audio_bos|>"],
        audio_end_token_id=vocab["<|audio_eos|>"], user_token_id=vocab["user"],
        vision_start_token_id=vocab["<|vision_bos|>"],  # read by get_rope_index; real configs carry it too
    )
    torch.manual_seed(seed)
    directory = _save(Qwen2_5OmniThinkerForConditionalGeneration(config), None, vocab, directory)
    return _write_omni_processor_files(directory, tokenizer, "Qwen2_5OmniProcessor",
                                       "<|audio_bos|><|AUDIO|><|audio_eos|>")


def _write_omni_processor_files(directory: Path, tokenizer: Any, processor_class: str, audio_text: str) -> Path:
    """The processor files as the Qwen Omni hub checkpoints ship them: one
    ``preprocessor_config.json`` for the feature extractor and the image processor (the video
    processor reads it too), the tokenizer, ``chat_template.json``. Written part by part: the
    processor object needs torchvision to exist."""
    from transformers import Qwen2VLImageProcessor, WhisperFeatureExtractor

    feature_extractor = WhisperFeatureExtractor(feature_size=128, sampling_rate=16_000, chunk_length=5)
    preprocessor = {**Qwen2VLImageProcessor().to_dict(), **feature_extractor.to_dict(), "processor_class": processor_class}
    (directory / "preprocessor_config.json").write_text(json.dumps(preprocessor, indent=2), encoding="utf-8")
    (directory / "chat_template.json").write_text(json.dumps({"chat_template": chatml_template(audio_text)}),
                                                  encoding="utf-8")
    tokenizer.save_pretrained(directory)
    return directory


def build_tiny_qwen3_omni_moe_thinker(directory: str | Path, *, seed: int = 0) -> Path:
    """Qwen3-Omni's thinker (``qwen3_omni_moe_thinker``): a mixture-of-experts text model (4 experts,
    2 per token), interleaved M-RoPE, deepstack vision, ``<|audio_start|><|audio_pad|><|audio_end|>``."""
    import torch
    from transformers.models.qwen3_omni_moe.configuration_qwen3_omni_moe import (
        Qwen3OmniMoeAudioEncoderConfig, Qwen3OmniMoeTextConfig, Qwen3OmniMoeThinkerConfig,
        Qwen3OmniMoeVisionEncoderConfig)
    from transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe import Qwen3OmniMoeThinkerForConditionalGeneration

    named = {"audio_token": "<|audio_pad|>", "image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
             "audio_bos_token": "<|audio_start|>", "audio_eos_token": "<|audio_end|>",
             "vision_bos_token": "<|vision_start|>", "vision_eos_token": "<|vision_end|>"}
    tokenizer, vocab = _tokenizer(list(named.values()), **named)
    text = _text_config(Qwen3OmniMoeTextConfig, vocab, head_dim=16, moe_intermediate_size=16, num_experts=4,
                        num_experts_per_tok=2, rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                                "mrope_section": [2, 3, 3], "interleaved": True})
    config = Qwen3OmniMoeThinkerConfig(
        audio_config=Qwen3OmniMoeAudioEncoderConfig(
            d_model=16, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32, num_mel_bins=128,
            max_source_positions=250, n_window=50, n_window_infer=100, output_dim=32,
            downsample_hidden_size=8).to_dict(),
        vision_config=Qwen3OmniMoeVisionEncoderConfig(
            depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=32,
            deepstack_visual_indexes=[0], num_position_embeddings=64).to_dict(),
        text_config=text, audio_token_id=vocab["<|audio_pad|>"], image_token_id=vocab["<|image_pad|>"],
        video_token_id=vocab["<|video_pad|>"], audio_start_token_id=vocab["<|audio_start|>"], user_token_id=vocab["user"],
    )
    config.vision_start_token_id = vocab["<|vision_start|>"]  # read by get_rope_index; real configs carry it too
    torch.manual_seed(seed)
    directory = _save(Qwen3OmniMoeThinkerForConditionalGeneration(config), None, vocab, directory)
    return _write_omni_processor_files(directory, tokenizer, "Qwen3OmniMoeProcessor",
                                       "<|audio_start|><|audio_pad|><|audio_end|>")


def _build_flamingo(directory: str | Path, seed: int, music: bool) -> Path:
    import torch
    import transformers as tf

    if music:
        tokenizer, vocab = _tokenizer(["<sound>", "<|sound_bos|>", "<|sound_eos|>"])
        processor = tf.MusicFlamingoProcessor(
            feature_extractor=tf.WhisperFeatureExtractor(feature_size=128, sampling_rate=16_000, chunk_length=5),
            tokenizer=tokenizer, chat_template=chatml_template("<sound>"), max_audio_len=20)
        ids = {"audio_bos_token_id": vocab["<|sound_bos|>"], "audio_eos_token_id": vocab["<|sound_eos|>"]}
        cfg_cls, model_cls = tf.MusicFlamingoConfig, tf.MusicFlamingoForConditionalGeneration
    else:
        tokenizer, vocab = _tokenizer(["<sound>"])
        processor = tf.AudioFlamingo3Processor(
            feature_extractor=tf.WhisperFeatureExtractor(feature_size=128, sampling_rate=16_000, chunk_length=5),
            tokenizer=tokenizer, chat_template=chatml_template("<sound>"), max_audio_len=20)
        ids, cfg_cls, model_cls = {}, tf.AudioFlamingo3Config, tf.AudioFlamingo3ForConditionalGeneration
    config = cfg_cls(
        audio_config=tf.AudioFlamingo3EncoderConfig(
            hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, num_mel_bins=128,
            max_source_positions=250).to_dict(),
        text_config=_text_config(tf.Qwen2Config, vocab), audio_token_id=vocab["<sound>"], **ids,
    )
    torch.manual_seed(seed)
    return _save(model_cls(config), processor, vocab, directory)


def build_tiny_audioflamingo3(directory: str | Path, *, seed: int = 0) -> Path:
    """Audio Flamingo 3 (``audioflamingo3``): ``<sound>`` tokens, audio in 5 s windows up to 20 s."""
    return _build_flamingo(directory, seed, music=False)


def build_tiny_musicflamingo(directory: str | Path, *, seed: int = 0) -> Path:
    """Music Flamingo (``musicflamingo``): AF3's encoder, ``<|sound_bos|>``/``<|sound_eos|>`` around audio."""
    return _build_flamingo(directory, seed, music=True)


def build_tiny_glmasr(directory: str | Path, *, seed: int = 0) -> Path:
    """GLM-ASR (``glmasr``): a Whisper-style encoder, a Llama decoder, ``<|pad|>`` audio tokens."""
    import torch
    import transformers as tf

    tokenizer, vocab = _tokenizer(["<|pad|>"])
    processor = tf.GlmAsrProcessor(
        feature_extractor=tf.WhisperFeatureExtractor(feature_size=128, sampling_rate=16_000, chunk_length=5),
        tokenizer=tokenizer, chat_template=chatml_template("<|pad|>"), max_audio_len=20)
    config = tf.GlmAsrConfig(
        audio_config=tf.GlmAsrEncoderConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                            num_attention_heads=2, max_position_embeddings=250).to_dict(),
        text_config=_text_config(tf.LlamaConfig, vocab), audio_token_id=vocab["<|pad|>"],
    )
    torch.manual_seed(seed)
    return _save(tf.GlmAsrForConditionalGeneration(config), processor, vocab, directory)


# Tekken's special tokens: the first 20 are mistral_common's own default list
# (Tekkenizer.DEPRECATED_SPECIAL_TOKENS), instruct tokenizers from v11 on need [ARGS] and [CALL_ID],
# VoxtralProcessor hard-codes the audio token id 24, and mistral_common looks [AUDIO],
# [BEGIN_AUDIO] and [TRANSCRIBE] up by name.
_TEKKEN_SPECIAL = ("<unk> <s> </s> [INST] [/INST] [AVAILABLE_TOOLS] [/AVAILABLE_TOOLS] [TOOL_RESULTS] "
                   "[/TOOL_RESULTS] [TOOL_CALLS] [IMG] <pad> [IMG_BREAK] [IMG_END] [PREFIX] [MIDDLE] [SUFFIX] "
                   "[SYSTEM_PROMPT] [/SYSTEM_PROMPT] [TOOL_CONTENT] [ARGS] [CALL_ID] <SPECIAL_22> <SPECIAL_23> "
                   "[AUDIO] [BEGIN_AUDIO]").split() + [f"<SPECIAL_{i}>" for i in range(26, 34)] + ["[TRANSCRIBE]"]
# tiktoken's pattern in Mistral's tekken files (pre-tokenisation only: the vocabulary is bytes here)
_TEKKEN_PATTERN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
                   r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|"
                   r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def write_tekken(path: str | Path, *, frame_rate: float = 12.5, chunk_length_s: float = 30.0) -> Path:
    """A Tekken tokenizer file (``tekken.json``, tokenizer version v11) in the format
    ``mistral_common``'s ``Tekkenizer.from_file`` reads: 40 special tokens (``[AUDIO]`` at 24), then
    the 256 byte tokens, no merges, and the ``audio`` section mistral_common lays audio tokens out
    by (16 kHz, ``frame_rate`` tokens per second, audio padded to ``chunk_length_s``: 12.5 and 30 s
    give the 375 tokens per window that Voxtral's encoder and projector produce)."""
    import base64

    special = _TEKKEN_SPECIAL + [f"<SPECIAL_{i}>" for i in range(len(_TEKKEN_SPECIAL), 40)]
    data = {
        "config": {"pattern": _TEKKEN_PATTERN, "num_vocab_tokens": 256, "default_vocab_size": 256 + len(special),
                   "default_num_special_tokens": len(special), "version": "v11"},
        "vocab": [{"rank": i, "token_bytes": base64.b64encode(bytes([i])).decode(),
                   "token_str": chr(i) if 32 <= i < 127 else None} for i in range(256)],
        "special_tokens": [{"rank": i, "token_str": s, "is_control": True} for i, s in enumerate(special)],
        "audio": {"sampling_rate": 16_000, "frame_rate": frame_rate, "chunk_length_s": chunk_length_s,
                  "audio_encoding_config": {"num_mel_bins": 128, "hop_length": 160, "window_size": 400}},
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def build_tiny_voxtral(directory: str | Path, *, seed: int = 0) -> Path:
    """Voxtral (``voxtral``): a Whisper-style encoder whose frames are stacked 4 to 1 into a Llama
    decoder; the Tekken tokenizer (:func:`write_tekken`) is read by mistral_common through
    transformers' ``MistralCommonBackend``. Audio is padded to 30 s windows of 375 ``[AUDIO]``
    tokens, as in the real model (the processor fixes the window). Needs ``mistral-common``."""
    import torch
    import transformers as tf
    from transformers.tokenization_mistral_common import MistralCommonBackend

    directory = Path(directory)
    write_tekken(directory / "tekken.json")
    tokenizer = MistralCommonBackend.from_pretrained(str(directory))
    processor = tf.VoxtralProcessor(
        feature_extractor=tf.WhisperFeatureExtractor(feature_size=128, sampling_rate=16_000), tokenizer=tokenizer)
    special = {"bos": tokenizer.bos_token_id, "eos": tokenizer.eos_token_id, "pad": tokenizer.pad_token_id}
    text = tf.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                          num_key_value_heads=1, head_dim=16, intermediate_size=64, max_position_embeddings=4096,
                          bos_token_id=special["bos"], eos_token_id=special["eos"], pad_token_id=special["pad"])
    config = tf.VoxtralConfig(
        # 3000 mel frames per 30 s -> 1500 encoder frames -> 375 audio embeddings (4 frames of 16 = 64)
        audio_config=tf.VoxtralEncoderConfig(hidden_size=16, intermediate_size=64, num_hidden_layers=1,
                                             num_attention_heads=2, num_mel_bins=128).to_dict(),
        text_config=text.to_dict(), audio_token_id=processor.audio_token_id,
    )
    torch.manual_seed(seed)
    model = tf.VoxtralForConditionalGeneration(config)
    model.generation_config.bos_token_id = special["bos"]
    model.generation_config.pad_token_id = special["pad"]
    model.generation_config.eos_token_id = special["eos"]
    model.save_pretrained(directory)
    processor.save_pretrained(directory)
    return directory


#: family name (a ``config.model_type``) -> builder(directory, seed=) -> directory
TINY_BUILDERS: dict[str, Callable[..., Path]] = {
    "qwen2_audio": build_tiny_qwen2_audio,
    "qwen2_5_omni_thinker": build_tiny_qwen2_5_omni_thinker,
    "qwen3_omni_moe_thinker": build_tiny_qwen3_omni_moe_thinker,
    "audioflamingo3": build_tiny_audioflamingo3,
    "musicflamingo": build_tiny_musicflamingo,
    "glmasr": build_tiny_glmasr,
    "voxtral": build_tiny_voxtral,
}


def build_tiny(family: str, directory: str | Path, *, seed: int = 0) -> Path:
    """Build the tiny checkpoint of ``family`` (a key of :data:`TINY_BUILDERS`) in ``directory``."""
    if family not in TINY_BUILDERS:
        raise ValueError(f"no tiny builder for {family!r}; known: {', '.join(TINY_BUILDERS)}")
    return TINY_BUILDERS[family](directory, seed=seed)


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 3:
        raise SystemExit(f"usage: python -m musiceval.models.tiny FAMILY DIR  (FAMILY: {', '.join(TINY_BUILDERS)})")
    print(build_tiny(sys.argv[1], sys.argv[2]))
