"""The builtin free-form metrics, registered in :data:`musiceval.metrics.registry.METRICS`.

- n-gram metrics (role ``finding``): BLEU (Papineni et al. 2002, up to 4-grams with brevity
  penalty), BLEU-4, METEOR (Banerjee & Lavie 2005), ROUGE-L (Lin 2004), CIDEr-D (Vedantam et al.
  2015; document frequencies over every loaded reference): :mod:`musiceval.metrics.lexical`;
- embedding metrics (role ``gate``): sentence cosine, BERTScore F1 (Zhang et al. 2020), CLAPText
  and the reference-free CLAPAudio (Wu et al. 2023): :mod:`musiceval.metrics.embedding`.
"""
from __future__ import annotations

import numpy as np

from musiceval.metrics.lexical_corpus import LEXICAL_METRICS, lexical_scores
from musiceval.metrics.registry import MetricContext, register_metric
from musiceval.stats.scales import UNIT, Scale, bounded

_LEXICAL_DOC = {
    "bleu": "BLEU (Papineni et al. 2002)", "bleu4": "BLEU-4 (4-gram precision only)",
    "meteor": "METEOR (Banerjee & Lavie 2005)", "rouge_l": "ROUGE-L F (Lin 2004)",
    "cider": "CIDEr-D (Vedantam et al. 2015)",
}


def _lexical(name: str):
    def fn(candidates, references, context: MetricContext) -> np.ndarray:
        return lexical_scores(candidates, references, [name], df_references=context.df_references,
                              store=context.lexical_cache)[name]

    fn.__name__ = name
    fn.__doc__ = _LEXICAL_DOC[name]
    return fn


for _name in LEXICAL_METRICS:
    register_metric(_name, role="finding", unit="0-1" if _name != "cider" else "CIDEr-D (0-10)",
                    scale=UNIT if _name != "cider" else bounded(0, 10),
                    description=_LEXICAL_DOC[_name])(_lexical(_name))


# BERTScore F1 of cosines: at most 1, below 0 when rescaled with a baseline
@register_metric("bertscore", model_based=True, unit="F1 (0-1)", description="BERTScore F1 (Zhang et al. 2020)",
                 scale=Scale(high=1.0))
def bertscore(candidates, references, context: MetricContext) -> np.ndarray:
    """BERTScore F1, bert-score's max over references."""
    return context.bertscore(candidates, references)


@register_metric("clap_text", model_based=True, unit="cosine (-1..1)", description="CLAP text-text cosine",
                 scale=bounded(-1, 1))
def clap_text(candidates, references, context: MetricContext) -> np.ndarray:
    """Cosine of CLAP text embeddings of answer and reference (max over references)."""
    return context.similarity("clap")(candidates, references)


@register_metric("clap_audio", model_based=True, reference_free=True, unit="cosine (-1..1)", scale=bounded(-1, 1),
                 description="CLAP cosine of the answer and the item's own clip")
def clap_audio(candidates, references, context: MetricContext) -> np.ndarray:
    """cos(CLAP_text(answer), CLAP_audio(the item's own clip)); reference-free."""
    return context.audio_similarity(candidates, context.item_ids)


@register_metric("sentence_cosine", model_based=True, unit="cosine (-1..1)", scale=bounded(-1, 1),
                 description="sentence-embedding cosine (all-MiniLM-L6-v2 by default)")
def sentence_cosine(candidates, references, context: MetricContext) -> np.ndarray:
    """Cosine of sentence embeddings of answer and reference (max over references)."""
    return context.similarity("sentence")(candidates, references)
