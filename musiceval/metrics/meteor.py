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
  pair); :func:`meteor_rows` scores a whole batch of token-id pairs with arrays (used by
  :class:`musiceval.metrics.lexical_corpus.LexicalCorpus`), bit-identical to :func:`meteor`.
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

import numpy as np

from musiceval.metrics.lexical import validate, word_tokens
from musiceval.metrics.stemmers import meteor_stem
from musiceval.metrics.token_cache import gather, unique

#: the fix :class:`WordNetMissingError` names: ``musiceval setup`` (:mod:`musiceval.wordnet_setup`)
#: installs WordNet 3.0 where nltk finds it, from the system package, a local copy or nltk's downloader
WORDNET_FIX = "run `musiceval setup` (offline: `musiceval setup --wordnet-from FILE_OR_DIR`)"


class WordNetMissingError(LookupError):
    """WordNet 3.0 is not installed where nltk looks for it; the message is one line naming the fix."""


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
    except (LookupError, OSError, ValueError) as exc:  # ValueError: nltk refused a path (a link out of the corpus)
        raise WordNetMissingError(f"METEOR needs WordNet 3.0, which nltk cannot {_failed(exc)}; {WORDNET_FIX}") from exc
    return reader


def _failed(exc: BaseException) -> str:
    """What went wrong, in a few words: nltk's LookupError text is a multi-line download banner."""
    if isinstance(exc, LookupError):
        return "find"
    return "read (" + " ".join(str(exc).split()) + ")"


def reopen_wordnet_files() -> None:
    """In a forked process: give the WordNet reader its own data files (nltk keeps them open and
    seeks them; a file description shared with the parent would interleave their reads)."""
    if _wordnet.cache_info().currsize:
        _wordnet()._data_file_map = {}


def require_wordnet():
    """Return the WordNet reader METEOR uses; raise :class:`WordNetMissingError` naming the fix
    when WordNet is not installed."""
    return _wordnet()


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
    stem, h, r = _match([(i, meteor_stem(w)) for i, w in h], [(j, meteor_stem(w)) for j, w in r])
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


# ----------------------------------------------------------------------------- corpus level
def _group_keys(owner: np.ndarray, word: np.ndarray, width: int) -> np.ndarray:
    return owner * width + word


def _rank_from_end(key: np.ndarray) -> np.ndarray:
    """For each entry (entries in text order), how many later entries share its key."""
    if not len(key):
        return key.copy()
    order = np.argsort(key, kind="stable")  # within a key: text order
    k = key[order]
    idx = np.arange(len(k))
    end = np.r_[k[1:] != k[:-1], True]
    group_end = np.minimum.accumulate(np.where(end, idx, len(k))[::-1])[::-1]
    rank = np.empty(len(k), dtype=np.int64)
    rank[order] = group_end - idx
    return rank


def _greedy_stage(h_owner, h_word, r_owner, r_word, width: int):
    """nltk's greedy matching from the end of the candidate, for all pairs at once.

    The k-th occurrence of a word counted from the end of the candidate takes the k-th
    occurrence counted from the end of the reference (what popping the last free position does),
    so a match is an equal (pair, word, rank from the end) on both sides. Entries must be in
    text order within each pair. Returns the indices of the matched candidate and reference
    entries.
    """
    h_key = _group_keys(h_owner, h_word, width)
    r_key = _group_keys(r_owner, r_word, width)
    h_rank, r_rank = _rank_from_end(h_key), _rank_from_end(r_key)
    span = int(max(h_rank.max(initial=0), r_rank.max(initial=0))) + 1
    top = int(max(h_key.max(initial=0), r_key.max(initial=0))) + 1
    if top * span >= 1 << 62:  # only for gigantic chunks: re-key densely first (exact)
        _, dense = unique(np.concatenate([h_key, r_key]), return_inverse=True)
        dense = dense.reshape(-1)
        h_key, r_key = dense[: len(h_key)], dense[len(h_key):]
    _, hi, ri = np.intersect1d(h_key * span + h_rank, r_key * span + r_rank, assume_unique=True, return_indices=True)
    return hi, ri


def meteor_rows(cache, hyp_rows: np.ndarray, ref_rows: np.ndarray, *, alpha: float = 0.9, beta: float = 3.0, gamma: float = 0.5) -> np.ndarray:
    """METEOR of each (candidate row, reference row) of a :class:`~musiceval.metrics.token_cache.TokenCache`.

    The same alignment as :func:`meteor` (exact, Porter-stem, then WordNet-synonym stages, each
    greedy from the end of the candidate) computed with arrays: the exact and stem stages are
    :func:`_greedy_stage`; the synonym stage runs nltk's greedy loop only over the candidate
    tokens that have a synonym among the pair's unmatched reference stems. Matches and chunks
    are exact integers and the score is the same float expression, so values are bit-identical
    to :func:`meteor`. Call ``cache.stems()`` after the last rows were added.
    """
    n = len(hyp_rows)
    ptr, words = cache.tokens()
    stems = cache.stems()
    h_owner, (h_word,) = gather(ptr, hyp_rows, words)
    r_owner, (r_word,) = gather(ptr, ref_rows, words)
    h_pos = _positions(h_owner)
    r_pos = _positions(r_owner)
    matched = []
    # stage 1: exact words; stage 2: stems of the leftovers
    width = len(cache.vocab) + 1
    hi, ri = _greedy_stage(h_owner, h_word, r_owner, r_word, width)
    matched.append((h_owner[hi], h_pos[hi], r_pos[ri]))
    h_left, r_left = _leftover(len(h_owner), hi), _leftover(len(r_owner), ri)
    h_owner, h_pos, h_word = h_owner[h_left], h_pos[h_left], stems[h_word[h_left]]
    r_owner, r_pos, r_word = r_owner[r_left], r_pos[r_left], stems[r_word[r_left]]
    hi, ri = _greedy_stage(h_owner, h_word, r_owner, r_word, width)
    matched.append((h_owner[hi], h_pos[hi], r_pos[ri]))
    h_left, r_left = _leftover(len(h_owner), hi), _leftover(len(r_owner), ri)
    matched.append(_synonym_stage(cache, h_owner[h_left], h_pos[h_left], h_word[h_left],
                                  r_owner[r_left], r_pos[r_left], r_word[r_left]))
    m_owner = np.concatenate([m[0] for m in matched])
    m_h = np.concatenate([m[1] for m in matched])
    m_r = np.concatenate([m[2] for m in matched])
    order = np.lexsort((m_h, m_owner))
    m_owner, m_h, m_r = m_owner[order], m_h[order], m_r[order]
    new_chunk = np.r_[True, (m_owner[1:] != m_owner[:-1]) | (m_h[1:] != m_h[:-1] + 1) | (m_r[1:] != m_r[:-1] + 1)] if len(m_owner) else np.zeros(0, bool)
    n_match = np.bincount(m_owner, minlength=n).tolist()
    n_chunks = np.bincount(m_owner[new_chunk], minlength=n).tolist()
    len_h = cache.lengths[hyp_rows].tolist()
    len_r = cache.lengths[ref_rows].tolist()
    out = np.zeros(n)
    for k in range(n):
        m = n_match[k]
        if m == 0 or not len_h[k] or not len_r[k]:
            continue
        precision, recall = m / len_h[k], m / len_r[k]
        fmean = precision * recall / (alpha * precision + (1 - alpha) * recall)
        out[k] = (1 - gamma * (n_chunks[k] / m) ** beta) * fmean
    return out


def _positions(owner: np.ndarray) -> np.ndarray:
    """Position of each entry within its owner's run (entries of one owner are contiguous)."""
    if not len(owner):
        return owner.copy()
    idx = np.arange(len(owner))
    start = np.r_[True, owner[1:] != owner[:-1]]
    return idx - np.maximum.accumulate(np.where(start, idx, 0))


def _leftover(size: int, used: np.ndarray) -> np.ndarray:
    keep = np.ones(size, dtype=bool)
    keep[used] = False
    return np.flatnonzero(keep)


def _synonym_stage(cache, h_owner, h_pos, h_stem, r_owner, r_pos, r_stem):
    """nltk's WordNet stage on the leftovers: from the end of the candidate, each token takes the
    latest free reference position whose stem is one of its WordNet synonyms."""
    empty = (np.zeros(0, np.int64),) * 3
    if not len(h_owner) or not len(r_owner):
        return empty
    vocab = cache.vocab
    present = set(unique(r_stem).tolist())
    words = list(vocab)  # id -> word (dict order is insertion order = id order)
    syn_of: dict[int, list[int]] = {}
    for s in unique(h_stem).tolist():
        ids = [vocab[w] for w in _synonyms(words[s]) if w in vocab]
        syn_of[s] = [i for i in ids if i in present]
    lengths = np.fromiter((len(syn_of[s]) for s in h_stem.tolist()), dtype=np.int64, count=len(h_stem))
    if not lengths.any():
        return empty
    src = np.repeat(np.arange(len(h_stem)), lengths)
    syn = np.fromiter((i for s in h_stem.tolist() for i in syn_of[s]), dtype=np.int64, count=int(lengths.sum()))
    width = len(vocab) + 1
    r_key = r_owner * width + r_stem
    order = np.argsort(r_key, kind="stable")
    r_sorted = r_key[order]
    q = h_owner[src] * width + syn
    lo, hi = np.searchsorted(r_sorted, q, "left"), np.searchsorted(r_sorted, q, "right")
    cnt = hi - lo
    if not cnt.any():
        return empty
    e_h = np.repeat(src, cnt)
    e_r = order[np.repeat(lo, cnt) + _positions(np.repeat(np.arange(len(q)), cnt))]
    # greedy per pair: candidate tokens from the end, each the latest free reference position
    e_order = np.lexsort((-r_pos[e_r], -h_pos[e_h], h_owner[e_h]))
    e_h, e_r = e_h[e_order].tolist(), e_r[e_order].tolist()
    used_r: set[int] = set()
    out_h, out_r = [], []
    k = 0
    while k < len(e_h):
        i = e_h[k]
        taken = False
        while k < len(e_h) and e_h[k] == i:
            if not taken and e_r[k] not in used_r:
                used_r.add(e_r[k])
                out_h.append(i)
                out_r.append(e_r[k])
                taken = True
            k += 1
    out_h_a = np.asarray(out_h, dtype=np.int64)
    out_r_a = np.asarray(out_r, dtype=np.int64)
    return h_owner[out_h_a], h_pos[out_h_a], r_pos[out_r_a]
