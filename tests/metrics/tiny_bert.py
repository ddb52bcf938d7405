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
    # transformers 5 reads ``vocab`` and ignores ``vocab_file`` (every word became [UNK], so texts of
    # one length had identical states); transformers 4 reads ``vocab_file``
    tokenizer = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, vocab_file=str(path / "vocab.txt"),
                                  do_lower_case=True)
    if len(tokenizer) != len(vocab):
        raise RuntimeError(f"tiny BERT tokenizer has {len(tokenizer)} tokens, not {len(vocab)}: its vocabulary was not read")
    tokenizer.save_pretrained(path)
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


#: error probabilities the tiny detector gives the texts it is fitted on, in order (cycled): each at
#: least 0.05 from FENSE's threshold 0.9 and from 0.5, and both thresholds cut them both ways, so float
#: noise between machines and batchings never flips a penalty
FITTED_ERROR_PROBS = (0.3, 0.02, 0.995, 0.7, 0.96)


def build_tiny_echecker(bert_dir: str | Path, ckpt: str | Path, texts: list[str], *, seed: int = 0,
                        error_probs: tuple[float, ...] = FITTED_ERROR_PROBS) -> Path:
    """A checkpoint in the released layout ``{"model_type", "num_classes", "state_dict"}``.

    Random tiny encoders give nearly equal [CLS] states, so the "error" row of the classifier and
    its bias are fitted (least squares on the [CLS] states of ``texts``) to give ``texts[k]`` the
    error probability ``error_probs[k % len(error_probs)]``; a fit that misses by more than 0.01
    raises, so no text lands near a threshold by accident.
    """
    import numpy as np
    import torch
    from transformers import AutoTokenizer

    from musiceval.metrics.fense_models import MAX_LEN, error_detector, preprocess

    torch.manual_seed(seed)
    model = error_detector(str(bert_dir), 6).eval()
    tok = AutoTokenizer.from_pretrained(str(bert_dir))
    want = np.array([error_probs[k % len(error_probs)] for k in range(len(texts))], dtype=np.float64)
    with torch.no_grad():
        batch = tok(preprocess(texts), truncation=True, padding="max_length", max_length=MAX_LEN, return_tensors="pt")
        cls = model.encoder(**batch).last_hidden_state[:, 0, :].double().numpy()
        design = np.hstack([cls, np.ones((len(texts), 1))])
        row, *_ = np.linalg.lstsq(design, np.log(want / (1 - want)), rcond=None)
        model.clf.weight[5] = torch.from_numpy(row[:-1]).float()
        model.clf.bias[5] = float(row[-1])
        got = torch.sigmoid(model(**batch)[:, 5]).double().numpy()
    if np.abs(got - want).max() > 0.01:
        raise ValueError(f"tiny error detector: fitted probabilities {got.round(3).tolist()} miss {want.tolist()}; "
                         "pass texts with distinct token sequences (at most the hidden size, 32)")
    state = model.state_dict()
    # the released checkpoint was saved by transformers < 4.31 with this buffer; the loaders drop it
    state["encoder.embeddings.position_ids"] = torch.arange(128).unsqueeze(0)
    torch.save({"model_type": str(bert_dir), "num_classes": 6, "state_dict": state}, ckpt)
    return Path(ckpt)
