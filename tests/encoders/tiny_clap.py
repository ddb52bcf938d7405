"""A tiny randomly initialised CLAP (transformers ``ClapModel`` + word-level RoBERTa-style tokenizer
+ 48 kHz ``ClapFeatureExtractor``) for tests: the real code paths of CLAPText and CLAPAudio, no
download. Its embeddings mean nothing; tests compare them with direct ``ClapModel`` calls."""
from __future__ import annotations

from pathlib import Path

WORDS = ("a the music song piano guitar drums calm fast slow rock jazz is with and of sad happy electronic "
         "flute violin trumpet major minor key tempo bpm note").split()


def tiny_config(vocab_size: int):
    from transformers import ClapAudioConfig, ClapConfig, ClapTextConfig

    text = ClapTextConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                          vocab_size=vocab_size, max_position_embeddings=80, type_vocab_size=1, pad_token_id=1,
                          projection_dim=16)
    audio = ClapAudioConfig(spec_size=256, num_mel_bins=64, patch_size=4, patch_stride=[4, 4], patch_embeds_hidden_size=16,
                            hidden_size=128, depths=[1, 1, 1, 1], num_attention_heads=[1, 2, 4, 8], window_size=8,
                            enable_fusion=False, projection_dim=16)
    return ClapConfig(text_config=text.to_dict(), audio_config=audio.to_dict(), projection_dim=16)


def tiny_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>")


def build_tiny_clap(path: str | Path, *, seed: int = 0):
    """Write a tiny random CLAP directory (weights, tokenizer, feature extractor) to ``path``.

    Returns ``(model, tokenizer)``, the in-memory objects the directory was saved from.
    """
    import torch
    from transformers import ClapFeatureExtractor, ClapModel

    torch.manual_seed(seed)
    tok = tiny_tokenizer()
    model = ClapModel(tiny_config(len(tok))).eval()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    ClapFeatureExtractor(feature_size=64, sampling_rate=48000, hop_length=480, max_length_s=10).save_pretrained(path)
    return model, tok
