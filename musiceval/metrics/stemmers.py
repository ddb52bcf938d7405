"""The two Porter stemmers of the lexical metrics, each the one its reference implementation uses,
so that a stemmed token is the reference's: :func:`rouge_stem` (rouge-score's ROUGE-L with
``use_stemmer=True``: nltk's ``PorterStemmer("ORIGINAL_ALGORITHM")``) and :func:`meteor_stem`
(nltk ``meteor_score``'s default ``PorterStemmer()``, NLTK extensions). Both are memoised per word.

They sit below :mod:`~musiceval.metrics.lexical`, :mod:`~musiceval.metrics.meteor` and
:mod:`~musiceval.metrics.token_cache`, which all stem.
"""
from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _rouge_stemmer():
    from nltk.stem import porter

    return porter.PorterStemmer("ORIGINAL_ALGORITHM")  # the stemmer rouge-score uses


@lru_cache(maxsize=65536)
def rouge_stem(token: str) -> str:
    """rouge-score's stem of one token (it stems tokens longer than 3 characters only)."""
    return _rouge_stemmer().stem(token)


@lru_cache(maxsize=1)
def _meteor_stemmer():
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()  # nltk meteor_score's default stemmer


@lru_cache(maxsize=131072)
def meteor_stem(word: str) -> str:
    """nltk ``meteor_score``'s stem of one word (its stage-2 matcher)."""
    return _meteor_stemmer().stem(word)
