"""CLAP text and audio towers (LAION-CLAP; Wu et al. 2023) for CLAPText and CLAPAudio.

Backends
--------
- **transformers** ``ClapModel`` from a hub id or a local directory (default
  ``laion/larger_clap_music``, the port of ``music_audioset_epoch_15_esc_90.14.pt``: HTSAT audio
  tower trained on music + AudioSet + LAION-Audio-630k, RoBERTa text tower).
- **original LAION checkpoint** (``*.pt``, as written by laion-clap's training code): the state
  dict is loaded with ``torch.load(weights_only=True)`` (no pickle code runs) and renamed to the
  transformers layout by :func:`laion_to_transformers_state_dict`, the mapping of transformers'
  ``convert_clap_original_pytorch_to_hf.py`` (``text_branch`` -> ``text_model``, ``audio_branch``
  -> ``audio_model.audio_encoder``, fused ``attn.qkv`` split into query/key/value, ``norm1/2`` ->
  ``layernorm_before/after``, ``mlp.fc1/2`` -> ``intermediate/output.dense``, ``bn0`` ->
  ``batch_norm``, ``*_projection.0/2`` -> ``linear1/2``). Layers transformers recomputes or does
  not have (STFT/log-mel front end, ``text_transform``/``audio_transform``, the classification
  head, attention-mask buffers) are dropped; any other unmatched key is an error, never ignored.
  The text tokenizer does not live in a ``.pt``: pass ``tokenizer=`` (default ``roberta-base``,
  the tokenizer of LAION-CLAP's RoBERTa text branch). The laion-clap package is not needed.

Resolution of ``clap`` encoder specs (``load_text_encoder("clap:<arg>")``): ``<arg>`` is a hub id,
a directory or a ``.pt`` file; empty means ``$MUSICEVAL_CLAP`` or ``laion/larger_clap_music``.
When the weights are absent the error names the fix (:data:`CLAP_DOWNLOAD`).

Embeddings are the towers' projected, L2-normalised outputs (``get_text_features`` /
``get_audio_features(...).pooler_output``) as float32 numpy rows.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from musiceval.encoders.base import l2_normalise, register_encoder

DEFAULT_CLAP = "laion/larger_clap_music"
CLAP_ENV = "MUSICEVAL_CLAP"
CLAP_DOWNLOAD = (
    f"run `huggingface-cli download {DEFAULT_CLAP}` on a machine with the Hugging Face hub, "
    f"or set {CLAP_ENV} to a local ClapModel directory or an original LAION checkpoint "
    "(music_audioset_epoch_15_esc_90.14.pt)"
)

# transformers' convert_clap_original_pytorch_to_hf.py KEYS_TO_MODIFY_MAPPING, applied in order.
_RENAMES = (
    ("text_branch", "text_model"),
    ("audio_branch", "audio_model.audio_encoder"),
    ("attn", "attention.self"),
    ("self.proj", "output.dense"),
    ("attention.self_mask", "attn_mask"),
    ("mlp.fc1", "intermediate.dense"),
    ("mlp.fc2", "output.dense"),
    ("norm1", "layernorm_before"),
    ("norm2", "layernorm_after"),
    ("bn0", "batch_norm"),
)
_DROPPED = re.compile(
    r"^(text_transform\.|audio_transform\.|audio_branch\.(spectrogram_extractor|logmel_extractor|tscam_conv|head)\.)"
    r"|attn_mask$|position_ids$"
)
_PROJECTION = re.compile(r"^(text|audio)_projection\.(\d+)\.(weight|bias)$")
# buffers transformers builds itself; absent from a LAION state dict by design
_BUFFERS = re.compile(r"(position_ids|token_type_ids|relative_position_index|num_batches_tracked)$")


def laion_to_transformers_state_dict(state_dict: Mapping[str, Any]) -> dict[str, Any]:
    """Rename an original LAION-CLAP state dict to the transformers ``ClapModel`` layout.

    Raises ``ValueError`` for fusion checkpoints (``enable_fusion=True`` is not supported here).
    """
    out: dict[str, Any] = {}
    for key, value in state_dict.items():
        if key.startswith("module."):
            key = key[len("module."):]
        if "fusion_model" in key or "mel_conv2d" in key:
            raise ValueError(f"checkpoint key {key!r} belongs to a fusion CLAP model; only non-fusion checkpoints "
                             "(e.g. music_audioset_epoch_15_esc_90.14.pt) can be converted")
        if _DROPPED.search(key):
            continue
        m = _PROJECTION.match(key)
        if m:
            out[f"{m.group(1)}_projection.linear{1 if m.group(2) == '0' else 2}.{m.group(3)}"] = value
            continue
        for old, new in _RENAMES:
            key = key.replace(old, new)
        if key.startswith("audio_model.") and ".qkv." in key:
            third = value.shape[0] // 3
            for k, part in enumerate(("query", "key", "value")):
                out[key.replace("qkv", part)] = value[k * third : (k + 1) * third]
        else:
            out[key] = value
    return out


def infer_clap_config(state_dict: Mapping[str, Any], *, text_heads: int = 12, audio_heads: Sequence[int] = (4, 8, 16, 32)):
    """A ``ClapConfig`` whose sizes are read off a transformers-layout state dict.

    Attention head counts cannot be read from shapes: defaults are RoBERTa-base's 12 and
    HTSAT's (4, 8, 16, 32), those of ``music_audioset_epoch_15_esc_90.14.pt``.
    """
    from transformers import ClapAudioConfig, ClapConfig, ClapTextConfig

    def shape(key: str) -> tuple[int, ...]:
        if key not in state_dict:
            raise ValueError(f"checkpoint lacks {key!r}; is it a LAION-CLAP checkpoint?")
        return tuple(state_dict[key].shape)

    n_text_layers = 1 + max(int(k.split(".")[3]) for k in state_dict if k.startswith("text_model.encoder.layer."))
    depths = []
    for i in range(len(audio_heads)):
        blocks = {int(k.split(".")[5]) for k in state_dict if k.startswith(f"audio_model.audio_encoder.layers.{i}.blocks.")}
        depths.append(len(blocks))
    vocab, text_hidden = shape("text_model.embeddings.word_embeddings.weight")
    projection_dim = shape("text_projection.linear2.weight")[0]
    patch_hidden = shape("audio_model.audio_encoder.patch_embed.proj.weight")[0]
    patch = shape("audio_model.audio_encoder.patch_embed.proj.weight")[2]
    text = ClapTextConfig(
        vocab_size=vocab,
        hidden_size=text_hidden,
        num_hidden_layers=n_text_layers,
        num_attention_heads=text_heads,
        intermediate_size=shape("text_model.encoder.layer.0.intermediate.dense.weight")[0],
        max_position_embeddings=shape("text_model.embeddings.position_embeddings.weight")[0],
        type_vocab_size=shape("text_model.embeddings.token_type_embeddings.weight")[0],
        pad_token_id=1,
        projection_dim=projection_dim,
    )
    bias_table = shape("audio_model.audio_encoder.layers.0.blocks.0.attention.self.relative_position_bias_table")[0]
    audio = ClapAudioConfig(
        patch_embeds_hidden_size=patch_hidden,
        hidden_size=shape("audio_model.audio_encoder.norm.weight")[0],
        depths=depths,
        num_attention_heads=list(audio_heads),
        num_mel_bins=shape("audio_model.audio_encoder.batch_norm.weight")[0],
        patch_size=patch,
        patch_stride=[patch, patch],
        window_size=int(round((bias_table**0.5 + 1) / 2)),
        enable_fusion=False,
        projection_dim=projection_dim,
    )
    return ClapConfig(text_config=text.to_dict(), audio_config=audio.to_dict(), projection_dim=projection_dim)


def load_laion_checkpoint(path: str | os.PathLike[str], *, config: Any = None):
    """Build a transformers ``ClapModel`` from an original LAION-CLAP ``.pt`` checkpoint.

    ``config`` is a ``ClapConfig`` (or a directory holding one); by default the sizes are
    inferred from the weights (:func:`infer_clap_config`). Every parameter of the model must
    be filled from the checkpoint and every checkpoint tensor used (after the documented drops).
    """
    import torch
    from transformers import ClapConfig, ClapModel

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"CLAP checkpoint {str(path)!r} not found; {CLAP_DOWNLOAD}")
    raw = torch.load(path, map_location="cpu", weights_only=True)
    state = raw.get("state_dict", raw) if isinstance(raw, dict) else None
    if not isinstance(state, dict) or not state:
        raise ValueError(f"{path}: no state dict found (expected a LAION-CLAP checkpoint with a 'state_dict' entry)")
    converted = laion_to_transformers_state_dict(state)
    if config is None:
        config = infer_clap_config(converted)
    elif isinstance(config, (str, os.PathLike)):
        config = ClapConfig.from_pretrained(config)
    model = ClapModel(config)
    result = model.load_state_dict(converted, strict=False)
    missing = [k for k in result.missing_keys if not _BUFFERS.search(k)]
    if missing or result.unexpected_keys:
        raise ValueError(f"{path}: checkpoint does not match the CLAP layout (missing {missing[:5]}, "
                         f"unexpected {list(result.unexpected_keys)[:5]}); is it a non-fusion LAION-CLAP checkpoint?")
    return model.eval()


class ClapEncoder:
    """CLAP text tower (``encode``) and audio tower (``encode_audio``), L2-normalised float32 rows."""

    def __init__(self, model: Any, tokenizer: Any, *, feature_extractor: Any = None, model_id: str,
                 batch_size: int = 32, device: str | None = None):
        import torch

        n_vocab = model.config.text_config.vocab_size
        if len(tokenizer) < min(100, n_vocab):
            raise RuntimeError(f"CLAP tokenizer for {model_id!r} loaded with only {len(tokenizer)} tokens (the model has "
                               f"{n_vocab}); the tokenizer files are missing or the hub was unreachable")
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.feature_extractor = feature_extractor
        self.batch_size = batch_size
        self.id = f"clap:{model_id}"
        #: the dimension of its text and audio rows (the cache refuses rows of another)
        self.dim = int(model.config.projection_dim)
        #: strings passed through the text tower (tests assert distinct-text embedding)
        self.n_encoded = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        out = []
        max_len = min(512, self.model.config.text_config.max_position_embeddings - 2)
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                batch = list(texts[start : start + self.batch_size])
                enc = self.tokenizer(batch, padding=True, truncation=True, max_length=max_len, return_tensors="pt")
                enc = {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
                out.append(self.model.get_text_features(**enc).pooler_output.float().cpu().numpy())
                self.n_encoded += len(batch)
        if not out:
            return np.zeros((0, self.model.config.projection_dim), dtype=np.float32)
        return l2_normalise(np.concatenate(out)).astype(np.float32)

    def encode_audio(self, waveforms: Sequence[np.ndarray], sampling_rate: int) -> np.ndarray:
        """Embed mono waveforms (resampled by the caller to the extractor's rate, 48 kHz).

        Non-fusion models see the first ``max_length_s`` seconds (10 s) of each clip: we crop
        before the extractor so its random crop ("rand_trunc") never fires and embeddings are
        deterministic; shorter clips are repeat-padded by the extractor.
        """
        import torch

        if self.feature_extractor is None:
            raise RuntimeError(f"{self.id}: no feature extractor loaded; CLAPAudio needs the model's ClapFeatureExtractor")
        if sampling_rate != self.feature_extractor.sampling_rate:
            raise ValueError(f"audio at {sampling_rate} Hz; resample to {self.feature_extractor.sampling_rate} Hz first")
        fusion = bool(self.model.config.audio_config.enable_fusion)
        limit = int(self.feature_extractor.nb_max_samples)
        out = []
        with torch.inference_mode():
            for start in range(0, len(waveforms), self.batch_size):
                batch = [np.asarray(w, dtype=np.float32) for w in waveforms[start : start + self.batch_size]]
                if fusion:
                    feats = self.feature_extractor(batch, sampling_rate=sampling_rate, return_tensors="pt")
                else:
                    batch = [w[:limit] for w in batch]
                    feats = self.feature_extractor(batch, sampling_rate=sampling_rate, truncation="rand_trunc", return_tensors="pt")
                feats = {k: v.to(self.device) for k, v in feats.items()}
                out.append(self.model.get_audio_features(**feats).pooler_output.float().cpu().numpy())
        return l2_normalise(np.concatenate(out)).astype(np.float32)


def load_clap(spec: str | None = None, *, tokenizer: str | None = None, config: Any = None, device: str | None = None) -> ClapEncoder:
    """Load a CLAP encoder from a hub id, a ``ClapModel`` directory or a LAION ``.pt`` file.

    ``spec`` empty or ``None`` means ``$MUSICEVAL_CLAP``, else ``laion/larger_clap_music``.
    ``tokenizer`` (for ``.pt`` checkpoints) defaults to ``roberta-base``.
    Raises ``FileNotFoundError`` naming :data:`CLAP_DOWNLOAD` when the weights are absent.
    """
    from transformers import AutoTokenizer, ClapFeatureExtractor, ClapModel

    spec = spec or os.environ.get(CLAP_ENV) or DEFAULT_CLAP
    if spec.endswith(".pt"):
        model = load_laion_checkpoint(spec, config=config)
        tok_name = tokenizer or "roberta-base"
        try:
            tok = AutoTokenizer.from_pretrained(tok_name)
        except OSError as exc:
            raise FileNotFoundError(f"tokenizer {tok_name!r} for CLAP checkpoint {spec!r} not found ({exc.__class__.__name__}); "
                                    f"run `huggingface-cli download {tok_name}` or pass tokenizer=<dir>") from exc
        return ClapEncoder(model, tok, feature_extractor=ClapFeatureExtractor(), model_id=os.path.abspath(spec), device=device)
    try:
        model = ClapModel.from_pretrained(spec)
        tok = AutoTokenizer.from_pretrained(tokenizer or spec)
    except OSError as exc:
        raise FileNotFoundError(f"CLAP weights {spec!r} not found ({exc.__class__.__name__}); {CLAP_DOWNLOAD}") from exc
    try:
        extractor = ClapFeatureExtractor.from_pretrained(spec)
    except OSError:
        extractor = None  # text-only directory: CLAPText works, CLAPAudio says what is missing
    model_id = os.path.abspath(spec) if os.path.isdir(spec) else spec
    return ClapEncoder(model, tok, feature_extractor=extractor, model_id=model_id, device=device)


@register_encoder("clap")
def _load_clap_encoder(arg: str) -> ClapEncoder:
    return load_clap(arg or None)
