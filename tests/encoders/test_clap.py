"""CLAP backends on a tiny random ClapModel the test builds: the transformers directory path and
the original LAION ``.pt`` path (a checkpoint written here in LAION's key layout)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from musiceval.encoders import clap as clapmod  # noqa: E402
from musiceval.encoders.base import load_text_encoder  # noqa: E402

WORDS = "a the music song piano guitar drums calm fast slow rock jazz is with and of sad happy electronic".split()


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


@pytest.fixture(scope="module")
def tiny_clap_dir(tmp_path_factory):
    from transformers import ClapFeatureExtractor, ClapModel

    torch.manual_seed(0)
    tok = tiny_tokenizer()
    model = ClapModel(tiny_config(len(tok))).eval()
    path = tmp_path_factory.mktemp("tiny_clap")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    ClapFeatureExtractor(feature_size=64, sampling_rate=48000, hop_length=480, max_length_s=10).save_pretrained(path)
    return path, model, tok


def _reference_text_embeddings(model, tok, texts):
    with torch.inference_mode():
        enc = tok(texts, padding=True, return_tensors="pt")
        out = model.get_text_features(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).pooler_output
    return out.numpy()


def test_clap_directory_loads_through_the_encoder_registry(tiny_clap_dir):
    path, model, tok = tiny_clap_dir
    enc = load_text_encoder(f"clap:{path}")
    texts = ["a calm piano song", "fast rock with drums and guitar"]
    emb = enc.encode(texts)
    assert emb.shape == (2, 16) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(emb, _reference_text_embeddings(model, tok, texts), atol=1e-5)
    assert enc.id == f"clap:{path}"
    assert enc.n_encoded == 2


def test_clap_audio_tower_embeds_a_ten_second_clip(tiny_clap_dir):
    path, _, _ = tiny_clap_dir
    enc = clapmod.load_clap(str(path))
    rng = np.random.default_rng(0)
    emb = enc.encode_audio([rng.standard_normal(48000 * 10).astype(np.float32) * 0.1], sampling_rate=48000)
    assert emb.shape == (1, 16)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="resample"):
        enc.encode_audio([np.zeros(16000, dtype=np.float32)], sampling_rate=16000)


def test_missing_clap_weights_name_the_download_command(monkeypatch, tmp_path):
    monkeypatch.delenv("MUSICEVAL_CLAP", raising=False)
    with pytest.raises(FileNotFoundError, match="huggingface-cli download laion/larger_clap_music") as info:
        clapmod.load_clap(str(tmp_path / "nowhere"))
    assert "MUSICEVAL_CLAP" in str(info.value)
    with pytest.raises(FileNotFoundError, match="huggingface-cli download laion/larger_clap_music"):
        clapmod.load_clap(str(tmp_path / "music_audioset_epoch_15_esc_90.14.pt"))


def test_env_var_selects_the_clap_weights(monkeypatch, tiny_clap_dir):
    path, _, _ = tiny_clap_dir
    monkeypatch.setenv("MUSICEVAL_CLAP", str(path))
    assert load_text_encoder("clap").id == f"clap:{path}"


# --- original LAION checkpoint layout -------------------------------------------------------

def to_laion_layout(hf_state: dict) -> dict:
    """Write a transformers ClapModel state dict in laion-clap's key layout (the inverse of the
    conversion under test), including the keys laion-clap has and transformers drops."""
    out = {}
    pending_qkv: dict[str, dict] = {}
    for key, value in hf_state.items():
        if key.endswith(("position_ids", "token_type_ids", "relative_position_index", "num_batches_tracked")):
            continue
        k = key
        if k.startswith("text_projection.") or k.startswith("audio_projection."):
            k = k.replace(".linear1.", ".0.").replace(".linear2.", ".2.")
        k = k.replace("text_model.", "text_branch.").replace("audio_model.audio_encoder.", "audio_branch.")
        if k.startswith("audio_branch."):
            k = (k.replace("attention.self.relative_position_bias_table", "attn.relative_position_bias_table")
                  .replace("attention.output.dense", "attn.proj")
                  .replace("layernorm_before", "norm1").replace("layernorm_after", "norm2")
                  .replace("intermediate.dense", "mlp.fc1").replace(".output.dense", ".mlp.fc2")
                  .replace("batch_norm", "bn0"))
            for part in ("query", "key", "value"):
                tag = f"attention.self.{part}."
                if tag in k:
                    base = k.replace(tag, "attn.qkv.")
                    pending_qkv.setdefault(base, {})[part] = value
                    break
            else:
                out[k] = value
            continue
        out[k] = value
    for base, parts in pending_qkv.items():
        out[base] = torch.cat([parts["query"], parts["key"], parts["value"]], dim=0)
    # present in real LAION checkpoints, absent from (or recomputed by) transformers
    out["text_branch.embeddings.position_ids"] = torch.arange(80)[None]
    out["text_transform.sequential.0.weight"] = torch.zeros(16, 16)
    out["audio_branch.logmel_extractor.melW"] = torch.zeros(1025, 64)
    out["audio_branch.spectrogram_extractor.stft.conv_real.weight"] = torch.zeros(513, 1, 1024)
    out["audio_branch.layers.0.blocks.0.attn_mask"] = torch.zeros(4, 64, 64)
    out["audio_branch.tscam_conv.weight"] = torch.zeros(527, 128, 2, 3)
    return {f"module.{k}": v for k, v in out.items()}


def test_laion_layout_writer_uses_the_real_laion_key_names(tiny_clap_dir):
    _, model, _ = tiny_clap_dir
    keys = set(to_laion_layout(model.state_dict()))
    # key names as they appear in laion-clap checkpoints (htsat.py / RobertaModel under DDP)
    for k in ("module.text_branch.encoder.layer.0.attention.self.query.weight",
              "module.audio_branch.layers.0.blocks.0.attn.qkv.weight",
              "module.audio_branch.layers.0.blocks.0.attn.proj.weight",
              "module.audio_branch.layers.0.blocks.0.norm1.weight",
              "module.audio_branch.layers.0.blocks.0.mlp.fc2.bias",
              "module.audio_branch.bn0.running_mean",
              "module.audio_branch.patch_embed.proj.weight",
              "module.text_projection.0.weight", "module.audio_projection.2.bias", "module.logit_scale_a"):
        assert k in keys, k


def test_original_laion_checkpoint_converts_to_the_same_model(tiny_clap_dir, tmp_path):
    path, model, tok = tiny_clap_dir
    ckpt = tmp_path / "music_audioset_epoch_15_esc_90.14.pt"
    torch.save({"epoch": 15, "state_dict": to_laion_layout(model.state_dict())}, ckpt)

    renamed = clapmod.laion_to_transformers_state_dict(torch.load(ckpt, weights_only=True)["state_dict"])
    # sizes are read off the weights; head counts cannot be, so the tiny model's are passed
    config = clapmod.infer_clap_config(renamed, text_heads=2, audio_heads=(1, 2, 4, 8))
    assert config.audio_config.depths == [1, 1, 1, 1] and config.audio_config.window_size == 8
    assert config.text_config.num_hidden_layers == 2 and config.projection_dim == 16
    converted = clapmod.load_laion_checkpoint(ckpt, config=config)
    ref = model.state_dict()
    for k, v in converted.state_dict().items():
        torch.testing.assert_close(v, ref[k], msg=k)

    enc = clapmod.load_clap(str(ckpt), tokenizer=str(path), config=tiny_config(len(tok)))
    texts = ["jazz piano with drums", "sad slow guitar"]
    np.testing.assert_allclose(enc.encode(texts), _reference_text_embeddings(model, tok, texts), atol=1e-5)
    assert enc.id == f"clap:{ckpt}"


def test_checkpoint_with_foreign_keys_is_refused(tiny_clap_dir, tmp_path):
    _, model, _ = tiny_clap_dir
    state = to_laion_layout(model.state_dict())
    state["module.audio_branch.unknown_layer.weight"] = torch.zeros(2)
    ckpt = tmp_path / "bad.pt"
    torch.save({"state_dict": state}, ckpt)
    with pytest.raises(ValueError, match="unexpected"):
        clapmod.load_laion_checkpoint(ckpt, config=tiny_config(len(tiny_tokenizer())))
    fused = to_laion_layout(model.state_dict())
    fused["module.audio_branch.mel_conv2d.weight"] = torch.zeros(2)
    torch.save({"state_dict": fused}, ckpt)
    with pytest.raises(ValueError, match="fusion"):
        clapmod.load_laion_checkpoint(ckpt, config=tiny_config(len(tiny_tokenizer())))


def test_clap_text_metric_runs_through_the_freeform_scorer(tiny_clap_dir):
    from musiceval.data.musicqa import FreeformData
    from musiceval.records import Item, Response
    from musiceval.scoring.freeform import FreeformEvaluation, Models

    path, _, _ = tiny_clap_dir
    refs = ["a calm piano song", "fast rock with drums", "sad slow guitar"]
    outs = ["calm piano", "rock drums", "slow guitar"]
    data = FreeformData(
        items=[Item(id=f"i{k}", question="Describe the music", reference=r, group=f"t{k}") for k, r in enumerate(refs)],
        responses=[Response(item_id=f"i{k}", condition="correct", model="m", prompt="Describe the music", text=o)
                   for k, o in enumerate(outs)],
    )
    run = FreeformEvaluation(data, seed=0, models=Models(clap=str(path)))
    correct = run.scores("clap_text", "correct")
    random = run.scores("clap_text", "random")  # same prompt: a derangement of the other answers
    assert correct.n == random.n == 3 and correct.groups == ("t0", "t1", "t2")
    assert run.models.encoder("clap").n_encoded == 6  # 3 answers + 3 references, each once
    assert all(-1.0 <= v <= 1.0 for v in correct.values)
