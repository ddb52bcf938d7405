"""BGE text encoders (``bge:<dir-or-hub-id>``): CLS pooling and L2 normalisation.

BAAI's BGE models (Xiao et al. 2023, "C-Pack") take the final hidden state of the first ([CLS])
token, not the mean of all tokens. CMI-Bench scores its tagging tasks with ``bge-large-en-v1.5``
(``bge:BAAI/bge-large-en-v1.5``). The retrieval query instruction
(:data:`BGE_QUERY_INSTRUCTION`) is applied by the caller, because whether to apply it is a
scoring rule (see docs/cmi-bench.md), not a property of the weights.
"""
from __future__ import annotations

from musiceval.encoders.base import register_encoder
from musiceval.encoders.sentence import MeanPoolingEncoder

BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "
BGE_LARGE_EN = "BAAI/bge-large-en-v1.5"


class ClsPoolingEncoder(MeanPoolingEncoder):
    """A transformers encoder whose sentence vector is the [CLS] token's last hidden state."""

    def __init__(self, name_or_path: str, **kwargs: object) -> None:
        super().__init__(name_or_path, **kwargs)  # type: ignore[arg-type]
        self.id = self.id.replace("meanpool:", "clspool:", 1)

    def pool(self, enc):
        return self.model(**enc).last_hidden_state[:, 0]


@register_encoder("bge")
def _load_bge(arg: str) -> ClsPoolingEncoder:
    return ClsPoolingEncoder(arg or BGE_LARGE_EN, max_length=512)
