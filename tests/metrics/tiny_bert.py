"""Tiny random BERT checkpoints for FENSE tests: a word-piece tokenizer and a 2-layer encoder,
saved with ``save_pretrained`` and loaded back through the real loaders."""
from __future__ import annotations

from pathlib import Path

WORDS = ("a the dog cat bird barks meows sings rain falls wind blows car engine passes people talk loudly "
         "softly while and in on with of is are music piano guitar plays slowly quickly man woman child "
         "water door opens closes bell rings").split()


def build_tiny_bert(path: str | Path, *, seed: int = 0) -> Path:
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + [f"w{i}" for i in range(60)]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab_file=str(path / "vocab.txt"), do_lower_case=True).save_pretrained(path)
    torch.manual_seed(seed)
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=64, max_position_embeddings=128)).save_pretrained(path)
    return path


def build_tiny_sbert(bert_dir: str | Path, path: str | Path) -> Path:
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.models import Pooling, Transformer

    word = Transformer(str(bert_dir), max_seq_length=128)
    dim = (getattr(word, "get_embedding_dimension", None) or word.get_word_embedding_dimension)()
    SentenceTransformer(modules=[word, Pooling(dim, pooling_mode="mean")], device="cpu").save(str(path))
    return Path(path)


def build_tiny_echecker(bert_dir: str | Path, ckpt: str | Path, texts: list[str], *, seed: int = 0) -> Path:
    """A checkpoint in the released layout ``{"model_type", "num_classes", "state_dict"}``. Random
    tiny encoders give nearly equal [CLS] states, so the "error" row of the classifier is rescaled
    and shifted on ``texts`` to put their error probabilities on both sides of 0.9."""
    import math

    import torch
    from transformers import AutoTokenizer

    from musiceval.metrics.fense_models import MAX_LEN, error_detector, preprocess

    torch.manual_seed(seed)
    model = error_detector(str(bert_dir), 6).eval()
    tok = AutoTokenizer.from_pretrained(str(bert_dir))
    with torch.no_grad():
        batch = tok(preprocess(texts), truncation=True, padding="max_length", max_length=MAX_LEN, return_tensors="pt")
        cls = model.encoder(**batch).last_hidden_state[:, 0, :]
        raw = cls @ model.clf.weight[5]
        scale = 3.0 / float(raw.std())
        ordered = sorted((raw * scale).tolist())
        mid = (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2
        model.clf.weight[5].mul_(scale)
        model.clf.bias[5] = math.log(0.9 / 0.1) - mid
    state = model.state_dict()
    # the released checkpoint was saved by transformers < 4.31 with this buffer; the loaders drop it
    state["encoder.embeddings.position_ids"] = torch.arange(128).unsqueeze(0)
    torch.save({"model_type": str(bert_dir), "num_classes": 6, "state_dict": state}, ckpt)
    return Path(ckpt)
