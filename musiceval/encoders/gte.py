"""GTE-Qwen2 text encoders (``gte:<dir-or-hub-id>``): last-token pooling and L2 normalisation.

Alibaba-NLP/gte-Qwen2-7B-instruct (Li et al. 2023, "Towards General Text Embeddings with
Multi-stage Contrastive Learning") is a decoder whose sentence vector is the final hidden state
of the last real token (the tokenizer appends ``<|endoftext|>``), L2-normalised. Queries carry
an instruction, documents none; the model card's query form is
``"Instruct: {task}\\nQuery: {query}"`` and its sentence-transformers ``"query"`` prompt
(:data:`GTE_QUERY_PROMPT`) is that form with the web-search task. CMI-Bench at commit
35235cb (nicolaus625/CMI-bench, ``evaluate.py`` ``multi_label_bert(embed="gte")``) embeds each
response with ``SentenceTransformer.encode([response], prompt_name="query")`` and the tags with
no prompt, and scores ``query @ tags.T * 100``.

The instruction is applied by the caller (``query_prefix`` of :func:`musiceval.protocols.mir.metrics.tasks.score_task`),
as for BGE: whether to apply it is a scoring rule. :attr:`GteEncoder.query_prompt` is the prompt
the checkpoint's ``config_sentence_transformers.json`` names ``"query"`` (the model card's text
when the file is absent). Loading goes through ``AutoModel``/``AutoTokenizer`` with
``trust_remote_code=True``, as the model card does; the repository's own modelling code then runs.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from musiceval.encoders.base import register_encoder
from musiceval.encoders.sentence import MeanPoolingEncoder

GTE_QWEN2_7B = "Alibaba-NLP/gte-Qwen2-7B-instruct"
#: the model card's web-search task in its query form (the checkpoint's sentence-transformers "query" prompt)
GTE_QUERY_PROMPT = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: "
#: the toolkit sets ``max_seq_length = 8192``
GTE_MAX_LENGTH = 8192


def detailed_instruct(task_description: str, query: str) -> str:
    """The model card's ``get_detailed_instruct``: ``"Instruct: {task}\\nQuery: {query}"``."""
    return f"Instruct: {task_description}\nQuery: {query}"


def last_token_pool(last_hidden_states, attention_mask):
    """The model card's ``last_token_pool``: the hidden state of each sequence's last real token
    (the last column when the batch is left-padded)."""
    import torch

    left_padding = bool(attention_mask[:, -1].sum() == attention_mask.shape[0])
    if left_padding:
        return last_hidden_states[:, -1]
    lengths = attention_mask.sum(dim=1) - 1
    return last_hidden_states[torch.arange(last_hidden_states.shape[0], device=last_hidden_states.device), lengths]


def _sentence_transformers_prompt(path: str, name: str) -> str | None:
    cfg = Path(path) / "config_sentence_transformers.json"
    if not cfg.is_file():
        return None
    try:
        prompts = json.loads(cfg.read_text()).get("prompts") or {}
    except (OSError, ValueError):
        return None
    value = prompts.get(name)
    return value if isinstance(value, str) else None


class GteEncoder(MeanPoolingEncoder):
    """A decoder-only embedding model: last-token pooling, L2 normalisation (model card code)."""

    def __init__(self, name_or_path: str, *, batch_size: int = 8, max_length: int = GTE_MAX_LENGTH,
                 device: str | None = None, trust_remote_code: bool = True):
        import torch
        from transformers import AutoModel, AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(name_or_path, trust_remote_code=trust_remote_code)
            self.model = AutoModel.from_pretrained(name_or_path, trust_remote_code=trust_remote_code)
        except OSError as exc:
            raise FileNotFoundError(
                f"GTE encoder {name_or_path!r} could not be loaded ({exc.__class__.__name__}); run "
                f"`huggingface-cli download {GTE_QWEN2_7B}` on a connected machine and pass "
                "--encoder gte:<that directory>"
            ) from exc
        if len(self.tokenizer) < 100:  # a placeholder vocabulary built when the files are missing
            raise RuntimeError(f"tokenizer for {name_or_path!r} loaded with only {len(self.tokenizer)} tokens; "
                               "the tokenizer files are missing or the hub was unreachable")
        if self.tokenizer.pad_token is None:
            raise ValueError(f"GTE encoder {name_or_path!r}: the tokenizer has no pad token; batches cannot be padded")
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device).eval()
        self.batch_size = batch_size
        self.max_length = max_length
        self.batch_tokens = batch_size * max_length  # the number of texts alone bounds a batch
        local = os.path.isdir(name_or_path)
        self.id = f"lasttoken:{os.path.abspath(name_or_path) if local else name_or_path}"
        self.name_or_path = name_or_path
        self.query_prompt = (_sentence_transformers_prompt(name_or_path, "query") if local else None) or GTE_QUERY_PROMPT
        self.n_encoded = 0

    def pool(self, enc):
        """Sentence vectors of one tokenised batch: the last real token's hidden state (the model card)."""
        return last_token_pool(self.model(**enc).last_hidden_state, enc["attention_mask"])


@register_encoder("gte")
def _load_gte(arg: str) -> GteEncoder:
    return GteEncoder(arg or GTE_QWEN2_7B)
