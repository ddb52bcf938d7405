"""Captioning tasks (MusicCaps, Song Describer) scored with the free-form metrics.

Default: :func:`musiceval.metrics.lexical_corpus.lexical_scores` (word-level BLEU with NIST smoothing,
BLEU-4, METEOR with WordNet, ROUGE-L F-measure, CIDEr-D), the metrics of the free-form protocol,
and BERTScore precision, recall and F1 (``bertscore_precision``, ``bertscore_recall``,
``bertscore_f1``) with the ``bert_score.BERTScorer`` passed in.

``compat="cmi-bench"``: the toolkit's ``music_captioning``:

- ``bleu`` / ``bleu4``: ``nltk.translate.bleu_score.sentence_bleu([ref], cand)`` on the RAW
  strings, i.e. over characters, unsmoothed (weights uniform / ``(0, 0, 0, 1)``);
- ``meteor``: nltk's METEOR on ``wordpunct_tokenize`` tokens (lowercased by nltk);
- ``rouge_l``: rouge-score ROUGE-L **recall** (Porter stemming), reported by the toolkit as "ROUGE";
- ``bertscore_recall``: ``bert_score.score(cands, [[ref], ...], lang="en")`` and the mean of R:
  roberta-large, layer 17 (bert-score's default for ``lang="en"``), no idf, no baseline
  rescaling. The toolkit prints only R. One reference per item, so bert-score's
  best-of-references rule changes nothing.

BERTScore needs a model; the caller loads it (``bertscorer``) and this module only scores. Without
one the BERTScore keys are absent and a note says so. Empty candidates score 0 on BERTScore
(:func:`musiceval.metrics.embedding.bertscore`).
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from musiceval.records import ItemFailure

#: what the toolkit runs: ``bert_score.score(..., lang="en")``
CMI_BENCH_BERTSCORE_MODEL = "roberta-large"
CMI_BENCH_BERTSCORE_LAYERS = 17


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


def bertscore_keys(compat: str | None) -> tuple[str, ...]:
    """BERTScore metric keys of a mode: the toolkit reports recall only."""
    return ("bertscore_recall",) if compat else ("bertscore_precision", "bertscore_recall", "bertscore_f1")


def _bertscore(scorer: Any, references: Sequence[str], candidates: Sequence[str], compat: str | None) -> dict[str, np.ndarray]:
    from musiceval.metrics.embedding import bertscore

    prf = bertscore(scorer, list(candidates), list(references))
    return {key: prf[key.removeprefix("bertscore_")] for key in bertscore_keys(compat)}


def caption_scores(references: Sequence[str], candidates: Sequence[str], *, compat: str | None = None,
                   bertscorer: Any = None, lexical_cache: Any = None) -> tuple[dict[str, np.ndarray], list[ItemFailure], list[str]]:
    """Per-item caption scores by metric name, failures and notes (one value per input item).

    Parameters
    ----------
    references, candidates : sequence of str
        Aligned reference captions (non-empty) and model captions.
    compat : None or "cmi-bench"
        Corrected metrics (default) or the toolkit's.
    bertscorer : bert_score.BERTScorer, optional
        The model BERTScore uses; when None the BERTScore keys are left out (with a note).
    lexical_cache : LexicalScoreCache, optional
        Where the default mode's lexical scores are kept between runs
        (:class:`musiceval.metrics.lexical_cache.LexicalScoreCache`).
    """
    notes: list[str] = []
    if compat:
        notes.append("cmi-bench: BLEU/BLEU-4 over characters; rouge_l is ROUGE-L recall; BERTScore is recall only")
        out = _cmi_scores(references, candidates)
    else:
        from musiceval.metrics.lexical_corpus import LEXICAL_METRICS, lexical_scores

        out = lexical_scores(list(candidates), list(references), LEXICAL_METRICS, store=lexical_cache)
    if bertscorer is None:
        notes.append("BERTScore not computed: no BERTScore model was given")
    else:
        out.update(_bertscore(bertscorer, references, candidates, compat))
    return out, [], notes
