"""METEOR (Banerjee & Lavie 2005; Lavie & Agarwal 2007), nltk's definition, with WordNet synonyms.

Conventions
-----------
- Tokenisation: :func:`musiceval.metrics.lexical.word_tokens` (lowercased ``\\w+`` runs).
- Alignment as ``nltk.translate.meteor_score``: exact matches, then Porter-stem matches, then
  WordNet 3.0 synonym matches, each stage greedy from the end of the candidate; score
  ``(1 - gamma * (chunks / matches) ** beta) * Fmean`` with ``Fmean = P R / (alpha P + (1 -
  alpha) R)``, alpha 0.9, beta 3, gamma 0.5; the maximum over references; 0 when nothing matches.
  The values equal ``nltk.translate.meteor_score.meteor_score`` on the same tokens.
- Speed: stems and synonym sets are cached per distinct word (nltk recomputes them for every
  pair), which is what makes 5,000 pairs take seconds instead of a minute.
- WordNet is required. When it is missing :func:`meteor` raises :class:`WordNetMissingError`
  naming the fix; METEOR never silently degrades to exact matching.

The METEOR 1.5 jar shipped with pycocoevalcap is a different metric (paraphrase tables, tuned
parameters, its own tokeniser and normalisation); its numbers are not comparable with these.

References
----------
Banerjee, Lavie (2005). METEOR: An automatic metric for MT evaluation with improved correlation
with human judgments. Lavie, Agarwal (2007). METEOR: An automatic metric for MT evaluation with
high levels of correlation with human judgments.
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from functools import lru_cache
from typing import Sequence

from musiceval.metrics.lexical import validate, word_tokens

WORDNET_FIX = (
    "run scripts/install_wordnet.sh (copies Debian's wordnet-base + wordnet-sense-index files into "
    "<venv>/nltk_data/corpora/wordnet), or point NLTK_DATA at a directory holding corpora/wordnet"
)


class WordNetMissingError(LookupError):
    """WordNet 3.0 is not installed where nltk looks for it."""


@lru_cache(maxsize=1)
def _wordnet():
    """nltk's WordNet reader with two load-time shortcuts that leave English synsets unchanged.

    - no WordNet-to-itself sense map (``map_wn``): only multilingual (OMW) lookups use it, and
      building it re-reads ``index.sense`` twice;
    - the lemma index is parsed with plain buffered file reads instead of nltk's seekable
      stream reader (same parsing rules), about 10x faster.
    Together they take WordNet's load from ~20 s to ~2 s on a loaded 2-core machine.
    """
    import os

    import nltk
    from nltk.corpus.reader.wordnet import ADJ, ADJ_SAT, WordNetCorpusReader

    class _EnglishWordNet(WordNetCorpusReader):
        def map_wn(self, version="wordnet"):
            return None

        def _load_lemma_pos_offset_map(self):
            for suffix in self._FILEMAP.values():
                with open(os.path.join(self.root.path, f"index.{suffix}"), encoding="utf-8") as fp:
                    for line in fp:
                        if line.startswith(" "):
                            continue
                        tok = line.split()
                        lemma, pos, n_synsets, n_pointers = tok[0], tok[1], int(tok[2]), int(tok[3])
                        start = 4 + n_pointers + 2  # skip pointers, sense count, tagsense count
                        offsets = [int(t) for t in tok[start : start + n_synsets]]
                        self._lemma_pos_offset_map[lemma][pos] = offsets
                        if pos == ADJ:
                            self._lemma_pos_offset_map[lemma][ADJ_SAT] = [o for o in offsets if o in self.satellite_offsets]

    try:
        with warnings.catch_warnings():  # "multilingual functions are not available": by design
            warnings.simplefilter("ignore", UserWarning)
            reader = _EnglishWordNet(nltk.data.find("corpora/wordnet"), None)
        reader.synsets("music")
    except (LookupError, OSError) as exc:
        raise WordNetMissingError(f"METEOR needs WordNet 3.0 synonyms, which nltk cannot find ({exc.__class__.__name__}); {WORDNET_FIX}") from exc
    return reader


def require_wordnet():
    """Return the WordNet reader METEOR uses; raise :class:`WordNetMissingError` naming the fix
    when WordNet is not installed."""
    return _wordnet()


@lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()  # nltk meteor_score's default stemmer


@lru_cache(maxsize=131072)
def _stem(word: str) -> str:
    return _stemmer().stem(word)


@lru_cache(maxsize=131072)
def _synonyms(word: str) -> frozenset[str]:
    wn = _wordnet()
    names = {lemma.name() for synset in wn.synsets(word) for lemma in synset.lemmas() if "_" not in lemma.name()}
    names.add(word)
    return frozenset(names)


def _match(hyp: list[tuple[int, str]], ref: list[tuple[int, str]]):
    """Greedy exact matching from the end of the candidate (nltk ``_match_enums``)."""
    positions: dict[str, list[int]] = defaultdict(list)
    for j, (_, w) in enumerate(ref):
        positions[w].append(j)
    matches, used_h, used_r = [], set(), set()
    for i in range(len(hyp) - 1, -1, -1):
        pos = positions.get(hyp[i][1])
        if pos:
            j = pos.pop()
            used_h.add(i)
            used_r.add(j)
            matches.append((hyp[i][0], ref[j][0]))
    return matches, [p for i, p in enumerate(hyp) if i not in used_h], [p for j, p in enumerate(ref) if j not in used_r]


def _synonym_match(hyp: list[tuple[int, str]], ref: list[tuple[int, str]]):
    """WordNet synonym matching (nltk ``_enum_wordnetsyn_match``): the latest reference position."""
    positions: dict[str, list[int]] = defaultdict(list)
    for j, (_, w) in enumerate(ref):
        positions[w].append(j)
    matches, used_h, used_r = [], set(), set()
    for i in range(len(hyp) - 1, -1, -1):
        best_j, best_word = -1, None
        for syn in _synonyms(hyp[i][1]):
            pos = positions.get(syn)
            if pos and pos[-1] > best_j:
                best_j, best_word = pos[-1], syn
        if best_word is not None:
            positions[best_word].pop()
            used_h.add(i)
            used_r.add(best_j)
            matches.append((hyp[i][0], ref[best_j][0]))
    return matches, [p for i, p in enumerate(hyp) if i not in used_h], [p for j, p in enumerate(ref) if j not in used_r]


def _count_chunks(matches: list[tuple[int, int]]) -> int:
    chunks = 1
    for (h0, r0), (h1, r1) in zip(matches, matches[1:]):
        if not (h1 == h0 + 1 and r1 == r0 + 1):
            chunks += 1
    return chunks


def _single_meteor(hyp: Sequence[str], ref: Sequence[str], alpha: float, beta: float, gamma: float) -> float:
    if not hyp or not ref:
        return 0.0
    h = list(enumerate(hyp))
    r = list(enumerate(ref))
    exact, h, r = _match(h, r)
    stem, h, r = _match([(i, _stem(w)) for i, w in h], [(j, _stem(w)) for j, w in r])
    # nltk passes the *stemmed* leftovers of the stem stage to the synonym stage
    syn, _, _ = _synonym_match(h, r)
    matches = sorted(exact + stem + syn, key=lambda p: p[0])
    n = len(matches)
    if n == 0:
        return 0.0
    precision, recall = n / len(hyp), n / len(ref)
    fmean = precision * recall / (alpha * precision + (1 - alpha) * recall)
    penalty = gamma * (_count_chunks(matches) / n) ** beta
    return (1 - penalty) * fmean


def meteor(
    candidate: str,
    references: str | Sequence[str],
    *,
    alpha: float = 0.9,
    beta: float = 3.0,
    gamma: float = 0.5,
) -> float:
    """METEOR of ``candidate`` against one or more references (max over references).

    Parameters
    ----------
    candidate : str
    references : str or sequence of str
    alpha, beta, gamma : float
        nltk's defaults (Lavie & Agarwal 2007).

    Returns
    -------
    float
        In [0, 1); 0 for an empty candidate or no matches.

    Raises
    ------
    WordNetMissingError
        WordNet 3.0 is not installed (see :data:`WORDNET_FIX`).
    ValueError
        Invalid input (see :func:`musiceval.metrics.lexical.validate`).
    """
    require_wordnet()
    cand, refs = validate(candidate, references)
    hyp = word_tokens(cand)
    return max(_single_meteor(hyp, word_tokens(r), alpha, beta, gamma) for r in refs)
