"""Loading FENSE's two published models: the Sentence-BERT encoder and the fluency-error detector.

- Sentence-BERT: ``sentence-transformers/paraphrase-TinyBERT-L6-v2`` through
  ``SentenceTransformer`` (its own pooling), rows L2-normalised (``normalize_embeddings=True``).
- Error detector (``echecker_clotho_audiocaps_base``, released with the paper at
  github.com/blmoistawinde/fense/releases/tag/V0.1): a ``torch.save`` checkpoint
  ``{"model_type", "num_classes", "state_dict"}``; the network is the reference packages'
  ``BERTFlatClassifier`` (:class:`ErrorDetector`): ``AutoModel.from_pretrained(model_type)``, dropout,
  ``Linear(hidden, num_classes)`` on the [CLS] state; sigmoid outputs in the order
  :data:`ERROR_NAMES`, FENSE using ``"error"``. Input text is lowercased with everything but word
  characters and spaces removed, tokenised to exactly 64 tokens (truncated, padded to max length).

Nothing is downloaded: a checkpoint name is looked up in ``$FENSE_DATA`` (default
``<torch hub dir>/fense_data``, the reference packages' cache) and a missing file raises with the
URL to fetch. ``model_type`` (``bert-base-uncased`` in the released checkpoint) may be overridden
with a local directory for offline use.
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

SBERT_MODEL = "sentence-transformers/paraphrase-TinyBERT-L6-v2"
ECHECKER = "echecker_clotho_audiocaps_base"
#: name -> (release URL, sha256), as published with the paper
ECHECKERS = {
    "echecker_clotho_audiocaps_base": (
        "https://github.com/blmoistawinde/fense/releases/download/V0.1/echecker_clotho_audiocaps_base.ckpt",
        "1a719f090af70614bbdb9f9437530b7e133c48cfa4a58d964de0d47fc974a2fa"),
    "echecker_clotho_audiocaps_tiny": (
        "https://github.com/blmoistawinde/fense/releases/download/V0.1/echecker_clotho_audiocaps_tiny.ckpt",
        "90ed0ac5033ec497ec66d4f68588053813e085671136dae312097c96c504f673"),
}
ERROR_NAMES = ("add_tail", "repeat_event", "repeat_adv", "remove_conj", "remove_verb", "error")
MAX_LEN = 64


def load_sbert(name_or_path: str = SBERT_MODEL, *, device: str | None = None, batch_size: int = 32):
    """``texts -> unit rows`` with a sentence-transformers model (FENSE's Sentence-BERT)."""
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(name_or_path, device=device or "cpu")
    except OSError as exc:
        raise FileNotFoundError(
            f"FENSE Sentence-BERT {name_or_path!r} could not be loaded ({exc.__class__.__name__}); run "
            f"`huggingface-cli download {SBERT_MODEL}` on a connected machine and pass that directory") from exc
    model.eval()

    def embed(texts: Sequence[str]) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, model.get_sentence_embedding_dimension() or 0), dtype=np.float32)
        return np.asarray(model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                                       convert_to_numpy=True, show_progress_bar=False), dtype=np.float32)

    embed.model = model  # type: ignore[attr-defined]
    #: the weights, for embedding caches keyed by (model, text)
    embed.id = f"fense-sbert:{os.path.abspath(name_or_path) if os.path.isdir(name_or_path) else name_or_path}"  # type: ignore[attr-defined]
    return embed


def _error_detector_class():
    import torch
    from torch import nn
    from transformers import AutoModel

    class ErrorDetector(nn.Module):
        """The reference packages' ``BERTFlatClassifier`` (same parameter names: ``encoder.*``, ``clf.*``)."""

        def __init__(self, model_type: str, num_classes: int = 5) -> None:
            super().__init__()
            self.model_type = model_type
            self.num_classes = num_classes
            self.encoder = AutoModel.from_pretrained(model_type)
            self.dropout = nn.Dropout(self.encoder.config.hidden_dropout_prob)
            self.clf = nn.Linear(self.encoder.config.hidden_size, num_classes)

        def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, **kwargs) -> torch.Tensor:
            outputs = self.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return self.clf(self.dropout(outputs.last_hidden_state[:, 0, :]))

    return ErrorDetector


def error_detector(model_type: str, num_classes: int = 6):
    """A fresh :class:`ErrorDetector` (``BERTFlatClassifier``) on ``model_type``'s encoder."""
    return _error_detector_class()(model_type, num_classes)


def echecker_path(name_or_path: str) -> Path:
    """The checkpoint file for a released name (in ``$FENSE_DATA``) or a path; raises naming the URL."""
    p = Path(name_or_path)
    if p.suffix == ".ckpt" or p.is_file():
        if not p.is_file():
            raise FileNotFoundError(f"FENSE error-detector checkpoint {p} does not exist")
        return p
    if name_or_path not in ECHECKERS:
        raise ValueError(f"unknown FENSE error detector {name_or_path!r}; one of {', '.join(ECHECKERS)} or a .ckpt path")
    import torch

    home = Path(os.path.expanduser(os.environ.get("FENSE_DATA", os.path.join(torch.hub.get_dir(), "fense_data"))))
    path = home / f"{name_or_path}.ckpt"
    if not path.is_file():
        url, sha = ECHECKERS[name_or_path]
        raise FileNotFoundError(f"FENSE error detector {name_or_path!r} not found at {path}: download {url} "
                                f"(sha256 {sha}) there, or set FENSE_DATA to its folder")
    return path


def preprocess(texts: Sequence[str]) -> list[str]:
    """The detector's input normalisation: drop everything but word characters and spaces, lowercase."""
    return [re.sub(r"[^\w\s]", "", t).lower() for t in texts]


def load_echecker(name_or_path: str = ECHECKER, *, model_type: str | None = None, device: str | None = None,
                  batch_size: int = 32):
    """``texts -> p(error)`` with a released FENSE error detector.

    ``model_type`` replaces the checkpoint's (``bert-base-uncased``) by a local directory holding
    that model's config and tokenizer (the checkpoint supplies every weight).
    """
    import torch
    from transformers import AutoTokenizer

    path = echecker_path(name_or_path)
    states = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(states, dict) or not {"model_type", "num_classes", "state_dict"} <= set(states):
        raise ValueError(f"{path}: not a FENSE error-detector checkpoint (needs model_type, num_classes, state_dict)")
    if int(states["num_classes"]) < len(ERROR_NAMES):
        raise ValueError(f"{path}: {states['num_classes']} classes; FENSE reads the 6th ('error')")
    kind = model_type or str(states["model_type"])
    try:
        model = error_detector(kind, int(states["num_classes"]))
        tokenizer = AutoTokenizer.from_pretrained(kind)
    except OSError as exc:
        raise FileNotFoundError(f"FENSE error detector: its encoder {kind!r} could not be loaded; run "
                                f"`huggingface-cli download {states['model_type']}` and pass model_type=<that directory>") from exc
    state = dict(states["state_dict"])
    expected = set(model.state_dict())
    for key in [k for k in state if k not in expected and k.endswith("position_ids")]:
        state.pop(key)  # saved by transformers < 4.31 as a buffer; now non-persistent
    model.load_state_dict(state)
    model.to(device or "cpu").eval()
    index = ERROR_NAMES.index("error")

    def error_probs(texts: Sequence[str]) -> np.ndarray:
        out = np.zeros(len(texts))
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                batch = tokenizer(preprocess(texts[start : start + batch_size]), truncation=True, padding="max_length",
                                  max_length=MAX_LEN, return_tensors="pt").to(device or "cpu")
                logits = model(**batch)
                out[start : start + len(batch["input_ids"])] = torch.sigmoid(logits)[:, index].float().cpu().numpy()
        return out

    error_probs.model = model  # type: ignore[attr-defined]
    #: the checkpoint, its encoder and input length, for caches keyed by (model, text)
    error_probs.id = f"fense-echecker:{path.resolve()}:{kind}:{MAX_LEN}"  # type: ignore[attr-defined]
    return error_probs
