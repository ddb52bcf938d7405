"""Tiny, randomly initialised audio LMs of several transformers families, built offline.

Each builder writes a checkpoint (``config.json``, safetensors weights, processor and tokenizer
files, chat template) that loads back through ``--model hf:<dir>`` exactly as a hub checkpoint
does: ``AutoConfig``, ``AutoProcessor``, the family's model class, ``generate``. Weights are
random and the vocabulary is a few dozen words, so answers are noise: they check plumbing (audio
tokens expanded, features of the right shape, batching, decoding), never a score.

Tokenizers are ``tokenizers`` word-level models with the family's special tokens, wrapped in
``PreTrainedTokenizerFast``; nothing is downloaded. ``python -m musiceval.models.tiny FAMILY DIR``.

Qwen2.5-Omni's processor requires a video processor, and transformers' video processors need
torchvision; without it the thinker checkpoint builds only with that class check bypassed and its
processor cannot be reloaded from disk (the test then hands it over in memory).

Voxtral is not here: its processor delegates the chat template and the audio token layout to
the ``mistral_common`` tokenizer backend (``MistralCommonBackend``, a Tekken vocabulary file),
which ``tokenizers`` cannot stand in for; a Voxtral checkpoint from the hub loads through the same
``hf:`` path (``musiceval.models.families.voxtral``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

__all__ = ["TINY_BUILDERS", "build_tiny", "chatml_template"]

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


def _save(model: Any, processor: Any, vocab: dict[str, int], directory: str | Path) -> Path:
    model.generation_config.pad_token_id = vocab["<|endoftext|>"]
    model.generation_config.eos_token_id = vocab["<|im_end|>"]
    directory = Path(directory)
    model.save_pretrained(directory)
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


def _video_processor() -> Any:
    """Qwen2-VL's video processor where torchvision is installed, else the torch-only base class
    (video is never used here; the processor only insists on having one)."""
    try:
        from transformers import Qwen2VLVideoProcessor

        return Qwen2VLVideoProcessor()
    except ImportError:
        from transformers.video_processing_utils import BaseVideoProcessor

        return BaseVideoProcessor()


def build_tiny_qwen2_5_omni_thinker(directory: str | Path, *, seed: int = 0) -> Path:
    """Qwen2.5-Omni's thinker (``qwen2_5_omni_thinker``): audio, vision and text towers, M-RoPE."""
    import torch
    from transformers import (Qwen2_5OmniProcessor, Qwen2_5OmniThinkerConfig,
                              Qwen2_5OmniThinkerForConditionalGeneration, Qwen2VLImageProcessor,
                              WhisperFeatureExtractor)
    from transformers.models.qwen2_5_omni.configuration_qwen2_5_omni import (
        Qwen2_5OmniAudioEncoderConfig, Qwen2_5OmniTextConfig, Qwen2_5OmniVisionEncoderConfig)

    named = {"audio_token": "<|AUDIO|>", "image_token": "<|IMAGE|>", "video_token": "<|VIDEO|>",
             "audio_bos_token": "<|audio_bos|>", "audio_eos_token": "<|audio_eos|>",
             "vision_bos_token": "<|vision_bos|>", "vision_eos_token": "<|vision_eos|>"}
    tokenizer, vocab = _tokenizer(list(named.values()), **named)
    processor = Qwen2_5OmniProcessor(
        image_processor=Qwen2VLImageProcessor(), video_processor=_video_processor(),
        feature_extractor=WhisperFeatureExtractor(feature_size=128, sampling_rate=16_000, chunk_length=5),
        tokenizer=tokenizer, chat_template=chatml_template("<|audio_bos|><|AUDIO|><|audio_eos|>"),
    )
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
    return _save(Qwen2_5OmniThinkerForConditionalGeneration(config), processor, vocab, directory)


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


#: family name (a ``config.model_type``) -> builder(directory, seed=) -> directory
TINY_BUILDERS: dict[str, Callable[..., Path]] = {
    "qwen2_audio": build_tiny_qwen2_audio,
    "qwen2_5_omni_thinker": build_tiny_qwen2_5_omni_thinker,
    "audioflamingo3": build_tiny_audioflamingo3,
    "musicflamingo": build_tiny_musicflamingo,
    "glmasr": build_tiny_glmasr,
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
