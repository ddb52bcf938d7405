"""CLAP backends on a tiny random ClapModel the test builds: the transformers directory path and
the original LAION ``.pt`` path (a checkpoint written here in LAION's key layout)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from musiceval.encoders import clap as clapmod  # noqa: E402
from musiceval.encoders.base import load_text_encoder  # noqa: E402
from tests.encoders.tiny_clap import build_tiny_clap, tiny_config, tiny_tokenizer  # noqa: E402


@pytest.fixture(scope="module")
def tiny_clap_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_clap")
    model, tok = build_tiny_clap(path)
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
    from musiceval.data.answers import AnswerSet
    from musiceval.records import Item, Response
    from musiceval.metrics.embedding_models import Models
    from musiceval.protocols.freeform.engine import FreeformEvaluation

    path, _, _ = tiny_clap_dir
    refs = ["a calm piano song", "fast rock with drums", "sad slow guitar"]
    outs = ["calm piano", "rock drums", "slow guitar"]
    data = AnswerSet(
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


# --- CLAPAudio through the free-form scorer --------------------------------------------------

AUDIO_FIXTURES = Path(__file__).resolve().parents[2] / "musiceval" / "evals" / "audio"
CLIPS = ("instrument_piano", "tempo_90bpm", "pitch_c3")


def _direct_clap_audio(model, path, answers, clips):
    """cos(text tower(answer), audio tower(clip)) straight from ``ClapModel`` (no musiceval encoder)."""
    from transformers import AutoTokenizer, ClapFeatureExtractor

    from musiceval.audio import load_audio

    fe, tok = ClapFeatureExtractor.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    waves = [load_audio(AUDIO_FIXTURES / f"{c}.flac", fe.sampling_rate)[: fe.nb_max_samples] for c in clips]
    with torch.inference_mode():
        feats = fe(waves, sampling_rate=fe.sampling_rate, truncation="rand_trunc", return_tensors="pt")  # no crop fires: <= 10 s
        audio = model.get_audio_features(**feats).pooler_output
        enc = tok(list(answers), padding=True, return_tensors="pt")
        text = model.get_text_features(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).pooler_output
    return torch.nn.functional.cosine_similarity(text, audio).numpy()


def _audio_run(tmp_path, clap_dir, items, answers, **kwargs):
    from musiceval.data.answers import AnswerSet
    from musiceval.records import Response
    from musiceval.metrics.embedding_models import Models
    from musiceval.protocols.freeform.engine import FreeformEvaluation

    data = AnswerSet(items=items, responses=[Response(it.id, "correct", "m", "Describe the music", a)
                                                for it, a in zip(items, answers)])
    return FreeformEvaluation(data, seed=0, models=Models(clap=str(clap_dir), **kwargs), data_dir=tmp_path)


def _copy_clips(tmp_path):
    import shutil

    for c in CLIPS:
        shutil.copy(AUDIO_FIXTURES / f"{c}.flac", tmp_path / f"{c}.flac")


def test_clap_audio_matches_a_direct_clap_model_computation(tiny_clap_dir, tmp_path):
    from musiceval.records import Item

    path, model, _ = tiny_clap_dir
    _copy_clips(tmp_path)
    items = [Item(id=c, question="Describe the music", audio=f"{c}.flac", reference="a song", group=c) for c in CLIPS]
    answers = ["a calm piano song", "fast drums", "a slow note of piano"]
    run = _audio_run(tmp_path, path, items, answers, cache_dir=str(tmp_path / "cache"))
    correct = run.scores("clap_audio", "correct")
    assert correct.ids == CLIPS and not correct.failures
    np.testing.assert_allclose(correct.values, _direct_clap_audio(model, path, answers, CLIPS), atol=1e-5)
    # Random: another clip's answer scored against THIS clip's audio
    random = run.scores("clap_audio", "random")
    partner = run.texts["random"][0]
    assert all(partner[c] != a for c, a in zip(CLIPS, answers))
    ids = list(random.ids)
    np.testing.assert_allclose(random.values, _direct_clap_audio(model, path, [partner[c] for c in ids], ids), atol=1e-5)

    # each clip went through the audio tower once; a second run is served by the on-disk cache
    encoder = run.models.audio_encoder()
    calls = []
    rerun = _audio_run(tmp_path, path, items, answers, cache_dir=str(tmp_path / "cache"))
    real = rerun.models.audio_encoder().encode_audio
    rerun.models.audio_encoder().encode_audio = lambda w, sr: calls.append(len(w)) or real(w, sr)
    np.testing.assert_allclose(rerun.scores("clap_audio", "correct").values, correct.values, atol=1e-6)
    assert calls == [] and encoder.n_encoded == 3  # 3 distinct answers; Random reused them


def test_clap_audio_bad_clips_are_per_item_failures_naming_the_file(tiny_clap_dir, tmp_path):
    import soundfile as sf

    from musiceval.records import Item

    path, _, _ = tiny_clap_dir
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    _copy_clips(data_dir)
    sf.write(data_dir / "empty.wav", np.zeros(0, dtype=np.float32), 16000)
    (data_dir / "garbage.flac").write_bytes(b"not audio at all")
    (tmp_path / "outside.flac").write_bytes((data_dir / "pitch_c3.flac").read_bytes())
    (data_dir / "link.flac").symlink_to(tmp_path / "outside.flac")
    audio = {"good": "instrument_piano.flac", "missing": "absent.flac", "empty": "empty.wav", "garbage": "garbage.flac",
             "escape": "../outside.flac", "absolute": str(tmp_path / "outside.flac"), "symlink": "link.flac", "none": None}
    items = [Item(id=k, question="Describe the music", audio=a, reference="a song") for k, a in audio.items()]
    run = _audio_run(data_dir, path, items, ["a calm piano song"] * len(items))
    s = run.scores("clap_audio", "correct")
    assert s.ids == ("good",)
    reasons = {f.item_id: f.reason for f in s.failures}
    assert set(reasons) == set(audio) - {"good"}
    assert "absent.flac" in reasons["missing"] and "not found" in reasons["missing"]
    assert "empty.wav" in reasons["empty"] and "empty" in reasons["empty"]
    assert "garbage.flac" in reasons["garbage"]
    assert "../outside.flac" in reasons["escape"] and "outside.flac" in reasons["absolute"]
    assert "link.flac" in reasons["symlink"] and "outside the data directory" in reasons["symlink"]
    assert "no 'audio' field" in reasons["none"]


def test_clap_audio_without_an_audio_tower_or_data_dir_says_what_is_missing(tiny_clap_dir, tmp_path):
    import shutil

    from musiceval.records import Item

    path, _, _ = tiny_clap_dir
    text_only = tmp_path / "text_only_clap"
    shutil.copytree(path, text_only)
    (text_only / "preprocessor_config.json").unlink()
    items = [Item(id="a", question="Q", audio="a.flac", reference="a song")]
    with pytest.raises(FileNotFoundError, match="huggingface-cli download laion/larger_clap_music"):
        _audio_run(tmp_path, text_only, items, ["piano"]).scores("clap_audio", "correct")
    run = _audio_run(tmp_path, path, items, ["piano"])
    run.data_dir = None
    with pytest.raises(ValueError, match="data_dir"):
        run.scores("clap_audio", "correct")
