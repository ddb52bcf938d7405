"""A tiny randomly initialised Qwen2 embedding checkpoint in gte-Qwen2's layout (test helper).

Qwen2 decoder weights + a word-level tokenizer that appends ``<|endoftext|>`` (as gte-Qwen2's
does) saved with ``save_pretrained``; :func:`build_tiny_gte_sentence_transformer` wraps the same
weights the way the hub repository is laid out for sentence-transformers (Transformer ->
last-token Pooling -> Normalize, prompts ``{"query": ..., "document": ""}``).
"""
from __future__ import annotations

from pathlib import Path


def build_tiny_gte(path: str | Path, *, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2Model

    words = ("instruct given a web search query retrieve relevant passages that answer the query : "
             "rock pop jazz classical piano guitar drums vocal female male slow fast calm electronic dance "
             "ambient techno beat violin strings sad happy energetic song music with and of is this").split()
    words += [f"w{i}" for i in range(80)]
    special = ["<|endoftext|>", "[UNK]"]
    vocab = {t: i for i, t in enumerate(special + list(dict.fromkeys(words)))}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.decoder = decoders.WordPiece(prefix="##")
    eos = vocab["<|endoftext|>"]
    backend.post_processor = processors.TemplateProcessing(single="$A <|endoftext|>", pair="$A $B <|endoftext|>",
                                                           special_tokens=[("<|endoftext|>", eos)])
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="<|endoftext|>",
                                  eos_token="<|endoftext|>", padding_side="right")
    torch.manual_seed(seed)
    model = Qwen2Model(Qwen2Config(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, intermediate_size=64, max_position_embeddings=512))
    path = Path(path)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def build_tiny_gte_sentence_transformer(weights: str | Path, path: str | Path) -> Path:
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.models import Normalize, Pooling, Transformer

    from musiceval.encoders.gte import GTE_QUERY_PROMPT

    word = Transformer(str(weights), max_seq_length=512)
    dim = (getattr(word, "get_embedding_dimension", None) or word.get_word_embedding_dimension)()
    pool = Pooling(dim, pooling_mode="lasttoken")
    st = SentenceTransformer(modules=[word, pool, Normalize()], prompts={"query": GTE_QUERY_PROMPT, "document": ""},
                             device="cpu")
    st.save(str(path))
    return Path(path)
