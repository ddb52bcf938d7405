"""Captioning tasks (MusicCaps, Song Describer) scored with the free-form metrics.

Default: :func:`musiceval.metrics.lexical.lexical_scores` (word-level BLEU with NIST smoothing,
BLEU-4, METEOR with WordNet, ROUGE-L F-measure, CIDEr-D), the metrics of the free-form protocol.

``compat="cmi-bench"``: the toolkit's ``music_captioning``:

- ``bleu`` / ``bleu4``: ``nltk.translate.bleu_score.sentence_bleu([ref], cand)`` on the RAW
  strings, i.e. over characters, unsmoothed (weights uniform / ``(0, 0, 0, 1)``);
- ``meteor``: nltk's METEOR on ``wordpunct_tokenize`` tokens (lowercased by nltk);
- ``rouge_l``: rouge-score ROUGE-L **recall** (Porter stemming), reported by the toolkit as "ROUGE";
- BERTScore recall with roberta-large is not computed here (the model is not available offline;
  the free-form protocol's BERTScore takes a local model).
"""
from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np

from musiceval.records import ItemFailure


def _cmi_scores(references: Sequence[str], candidates: Sequence[str]) -> dict[str, np.ndarray]:
    from nltk.tokenize import wordpunct_tokenize
    from nltk.translate.bleu_score import sentence_bleu
    from rouge_score import rouge_scorer

    from musiceval.metrics.meteor import _single_meteor, require_wordnet

    require_wordnet()
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    out: dict[str, list[float]] = {"bleu": [], "bleu4": [], "meteor": [], "rouge_l": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nltk warns on zero n-gram counts; the score is then 0
        for ref, cand in zip(references, candidates):
            out["rouge_l"].append(float(scorer.score(ref, cand)["rougeL"].recall))
            out["bleu"].append(float(sentence_bleu([ref], cand)))
            out["bleu4"].append(float(sentence_bleu([ref], cand, weights=(0.0, 0.0, 0.0, 1.0))))
            hyp = tuple(t.lower() for t in wordpunct_tokenize(cand))
            rt = tuple(t.lower() for t in wordpunct_tokenize(ref))
            out["meteor"].append(float(_single_meteor(hyp, rt, 0.9, 3.0, 0.5)) if hyp and rt else 0.0)
    return {k: np.array(v) for k, v in out.items()}


def caption_scores(references: Sequence[str], candidates: Sequence[str], *, compat: str | None = None) -> tuple[dict[str, np.ndarray], list[ItemFailure], list[str]]:
    """Per-item caption scores by metric name, failures and notes (one value per input item)."""
    notes: list[str] = []
    if compat:
        notes.append("cmi-bench: BLEU/BLEU-4 over characters; rouge_l is ROUGE-L recall; BERTScore not computed")
        return _cmi_scores(references, candidates), [], notes
    from musiceval.metrics.lexical import LEXICAL_METRICS, lexical_scores

    return lexical_scores(list(candidates), list(references), LEXICAL_METRICS), [], notes
