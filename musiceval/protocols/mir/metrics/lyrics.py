"""Lyrics transcription: word and character error rate per utterance (jiwer).

Conventions
-----------
Inputs are cleaned strings (see :mod:`musiceval.parsers.lyrics`). Rates are fractions, not
percent, and exceed 1 when a model inserts more words than the reference has (loops such as
"go go go ..."). CMI-Bench averages per-utterance rates (not corpus-level WER); so does this
module. An empty hypothesis scores 1 (all deletions). An empty reference cannot be scored here
(jiwer 4 returns 1 for it; the CMI-Bench compatible scorer keeps jiwer's value).

Metrics
-------
- :func:`wer_cer`: (WER, CER) of one utterance via ``jiwer.wer`` / ``jiwer.cer`` with jiwer's
  default transforms (CER counts spaces).
"""
from __future__ import annotations


def wer_cer(reference: str, hypothesis: str) -> tuple[float, float]:
    """WER and CER of one utterance.

    >>> wer_cer("some days i'm rich", "some days im rich")
    (0.25, 0.05555555555555555)

    Raises
    ------
    ValueError
        When the reference is empty after cleaning.
    """
    import jiwer

    if not reference.strip():
        raise ValueError("empty reference: WER is undefined")
    return float(jiwer.wer(reference, hypothesis)), float(jiwer.cer(reference, hypothesis))
