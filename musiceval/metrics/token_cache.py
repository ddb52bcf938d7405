"""One tokenisation per distinct text, shared by every lexical metric and every condition.

:class:`TokenCache` interns texts. The first time a text is seen (in a batch, see
:meth:`TokenCache.rows`) it is tokenised once with :func:`musiceval.metrics.lexical.word_tokens`'s
rule (lowercased ``\\w+`` runs), its words become integer ids of one vocabulary, and its 1- to
4-grams become integer ids too, counted per text and stored as sorted (gram id, count) rows.
Everything downstream (BLEU clipping, CIDEr-D tf-idf, METEOR alignment) works on these integer
arrays with numpy, a whole batch of pairs at a time, instead of on Python ``Counter`` objects.

Exactness: n-gram ids are exact, never hashed. The id of an n-gram is interned from the pair
(id of its first n-1 tokens, id of its last token) packed into one int64 (``prev << 24 | token``),
so two n-grams share an id iff they are the same token sequence. Interning is persistent: the
same n-gram has the same id in every batch, so references tokenised for one condition are reused
as they are by the next one.

Memory: a text costs its token ids plus its distinct n-grams (a few int64 per token); the cache
holds nothing else (no per-pair state). :meth:`TokenCache.clear` drops everything; the module
default cache of :func:`musiceval.metrics.lexical_corpus.lexical_scores` is cleared when it would grow
past ``max_texts`` texts.
"""
from __future__ import annotations

import itertools
import re

import numpy as np

from musiceval.metrics.stemmers import meteor_stem, rouge_stem

MAX_N = 4
_WORD_RE = re.compile(r"\w+")
_ROUGE_SPLIT_RE = re.compile(r"[^a-z0-9]+")
_TOKEN_BITS = 24  # vocabulary ids must stay below 2**24 (16.7M distinct words)
_MERGE_AT = 8
BATCH = 8192
_UIDS = itertools.count()  # texts tokenised and interned together


def unique(values: np.ndarray, *, return_inverse: bool = False, return_counts: bool = False):
    """Sort-based ``numpy.unique`` for int64 keys (numpy 2's hash-based ``unique`` is many times
    slower on large sparse keys). Returns ``uniq`` or a tuple with the inverse and/or counts."""
    values = np.asarray(values)
    if return_inverse:
        order = np.argsort(values, kind="stable")
        ordered = values[order]
    else:
        ordered = np.sort(values)
    first = np.empty(len(ordered), dtype=bool)
    if len(ordered):
        first[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    out = [ordered[first]]
    if return_inverse:
        inverse = np.empty(len(values), dtype=np.int64)
        inverse[order] = np.cumsum(first) - 1
        out.append(inverse)
    if return_counts:
        out.append(np.diff(np.r_[np.flatnonzero(first), len(ordered)]))
    return out[0] if len(out) == 1 else tuple(out)


class _Interner:
    """Exact, persistent map from int64 keys to dense ids (sorted segments, merged now and then)."""

    def __init__(self) -> None:
        self.segments: list[tuple[np.ndarray, np.ndarray]] = []
        self.size = 0

    def ids(self, keys: np.ndarray) -> np.ndarray:
        out = np.full(len(keys), -1, dtype=np.int64)
        for seg_keys, seg_ids in self.segments:
            pos = np.searchsorted(seg_keys, keys)
            pos[pos == len(seg_keys)] = 0
            hit = seg_keys[pos] == keys
            out[hit] = seg_ids[pos[hit]]
        miss = out < 0
        if miss.any():
            new, inverse = unique(keys[miss], return_inverse=True)
            new_ids = np.arange(self.size, self.size + len(new), dtype=np.int64)
            self.size += len(new)
            out[miss] = new_ids[inverse.reshape(-1)]
            self.segments.append((new, new_ids))
            if len(self.segments) > _MERGE_AT:
                k = np.concatenate([s[0] for s in self.segments])
                i = np.concatenate([s[1] for s in self.segments])
                order = np.argsort(k, kind="stable")
                self.segments = [(k[order], i[order])]
        return out


class _Csr:
    """Rows of (sorted ids, counts) appended batch by batch; consolidated on read."""

    def __init__(self) -> None:
        self._lengths: list[np.ndarray] = []
        self._ids: list[np.ndarray] = []
        self._cnt: list[np.ndarray] = []
        self._view: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def append(self, lengths: np.ndarray, ids: np.ndarray, counts: np.ndarray | None) -> None:
        # stored compactly (ids < 2**31, counts < 2**31); widened to int64 per gather
        self._lengths.append(np.asarray(lengths, dtype=np.int64))
        self._ids.append(np.asarray(ids, dtype=np.int32))
        self._cnt.append(np.asarray(counts if counts is not None else np.zeros(0), dtype=np.int32))
        self._view = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._view is None:
            if len(self._ids) != 1:
                empty = np.zeros(0, np.int64)
                self._lengths = [np.concatenate(self._lengths) if self._lengths else empty]
                self._ids = [np.concatenate(self._ids) if self._ids else empty]
                self._cnt = [np.concatenate(self._cnt) if self._cnt else empty]
            ptr = np.zeros(len(self._lengths[0]) + 1, dtype=np.int64)
            np.cumsum(self._lengths[0], out=ptr[1:])
            self._view = (ptr, self._ids[0], self._cnt[0])
        return self._view


def gather(ptr: np.ndarray, rows: np.ndarray, *values: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Entries of CSR ``rows`` (in order): the position in ``rows`` owning each entry, and the
    entries of each array in ``values``."""
    starts = ptr[rows]
    lengths = ptr[rows + 1] - starts
    total = int(lengths.sum())
    owner = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    offsets = np.arange(total, dtype=np.int64) + np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return owner, [v[offsets].astype(np.int64, copy=False) for v in values]


class TokenCache:
    """Interned texts: word ids, 1- to 4-gram ids and counts, stems, rouge-score tokens.

    Parameters
    ----------
    max_texts : int, optional
        Only informative for callers that bound memory (see
        :func:`musiceval.metrics.lexical_corpus.lexical_scores`); the cache itself never evicts
        silently, because rows handed out must stay valid.
    """

    def __init__(self, max_texts: int | None = None) -> None:
        self.max_texts = max_texts
        self.uid = next(_UIDS)  # never reused, unlike id()
        self.generation = -1
        self.clear()

    def clear(self) -> None:
        """Forget every text; rows and n-gram ids handed out before are invalid afterwards
        (``generation`` counts the clears, so memos keyed by it expire)."""
        self.generation += 1
        self._row: dict[str, int] = {}
        self.vocab: dict[str, int] = {}
        self.lengths = np.zeros(0, dtype=np.int64)
        self._interners = [None] + [_Interner() for _ in range(1, MAX_N)]
        self._grams = [_Csr() for _ in range(MAX_N)]
        self._token_ptr = _Csr()
        self._stems: np.ndarray = np.zeros(0, dtype=np.int64)
        self._rouge: dict[bool, list[list[int]]] = {False: [], True: []}

    def __len__(self) -> int:
        return len(self._row)

    def n_grams(self, n: int) -> int:
        """How many distinct n-grams (n = 1..4) the cache has interned."""
        return len(self.vocab) if n == 1 else self._interners[n - 1].size

    # ------------------------------------------------------------------ texts
    def rows(self, texts) -> np.ndarray:
        """Row of each text (int64 array), tokenising the texts not seen before, once each."""
        index = self._row
        new = [t for t in dict.fromkeys(texts) if t not in index]
        for lo in range(0, len(new), BATCH):  # bounded working memory
            self._add(new[lo : lo + BATCH])
        return np.fromiter((index[t] for t in texts), dtype=np.int64, count=len(texts))

    def _add(self, texts: list[str]) -> None:
        first = len(self._row)
        for k, text in enumerate(texts):
            self._row[text] = first + k
        findall = _WORD_RE.findall
        per_text = [findall(text.lower()) for text in texts]
        ids = self._intern(per_text)
        lengths = np.fromiter(map(len, per_text), dtype=np.int64, count=len(per_text))
        vocab = self.vocab
        if len(vocab) >= 1 << _TOKEN_BITS:
            raise ValueError(f"vocabulary of {len(vocab)} words exceeds 2**{_TOKEN_BITS}; score the corpus in smaller parts")
        self.lengths = np.concatenate([self.lengths, lengths])
        tok = ids
        text_of = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
        pos = np.arange(len(tok), dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        self._token_ptr.append(lengths, tok, None)
        prev = tok  # ids of the (n-1)-grams ending at each position (valid where pos >= n - 2)
        for n in range(1, MAX_N + 1):
            if n == 1:
                ids = tok
                valid = np.ones(len(tok), dtype=bool)
            else:
                valid = pos >= n - 1
                keys = (prev[np.flatnonzero(valid) - 1] << _TOKEN_BITS) | tok[valid]
                ids = np.full(len(tok), -1, dtype=np.int64)
                ids[valid] = self._interners[n - 1].ids(keys)
            width = max(1, self.n_grams(n))
            if width >= 1 << 31:
                raise ValueError(f"more than 2**31 distinct {n}-grams; score the corpus in smaller parts")
            combined = text_of[valid] * width + ids[valid]
            uniq, counts = unique(combined, return_counts=True)
            owner = uniq // width
            self._grams[n - 1].append(np.bincount(owner, minlength=len(texts)), uniq % width, counts)
            prev = ids

    def _intern(self, per_text: list[list[str]]) -> np.ndarray:
        """Vocabulary ids of all the words of ``per_text``, concatenated (new words added)."""
        from itertools import chain

        vocab = self.vocab
        words = list(chain.from_iterable(per_text))
        new = [w for w in dict.fromkeys(words) if w not in vocab]
        vocab.update(zip(new, range(len(vocab), len(vocab) + len(new))))
        return np.fromiter(map(vocab.__getitem__, words), dtype=np.int64, count=len(words))

    # ------------------------------------------------------------------ views
    def grams(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """CSR (ptr, gram ids, counts) of the n-grams of every row, ids sorted within a row."""
        return self._grams[n - 1].arrays()

    def tokens(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR (ptr, word ids) of every row, in text order."""
        ptr, ids, _ = self._token_ptr.arrays()
        return ptr, ids

    def stems(self) -> np.ndarray:
        """Vocabulary id of the Porter stem (nltk's default stemmer, METEOR's) of every word id."""
        if len(self._stems) < len(self.vocab):
            words = list(self.vocab)[len(self._stems):]
            vocab = self.vocab
            new = [vocab.setdefault(meteor_stem(w), len(vocab)) for w in words]
            self._stems = np.concatenate([self._stems, np.asarray(new, dtype=np.int64)])
            # stems that were new words are their own stem's input: stem them too
            while len(self._stems) < len(vocab):
                words = list(vocab)[len(self._stems):]
                new = [vocab.setdefault(meteor_stem(w), len(vocab)) for w in words]
                self._stems = np.concatenate([self._stems, np.asarray(new, dtype=np.int64)])
        return self._stems

    def rouge_tokens(self, rows: np.ndarray, texts: list[str], use_stemmer: bool) -> list[list[int]]:
        """rouge-score's tokens of each row as word ids (see :func:`musiceval.metrics.lexical.rouge_tokens`)."""
        store = self._rouge[use_stemmer]
        if len(store) < len(self._row):
            store.extend([None] * (len(self._row) - len(store)))  # type: ignore[list-item]
        todo = [(row, text) for row, text in dict.fromkeys(zip(rows.tolist(), texts)) if store[row] is None]
        if todo:
            split = _ROUGE_SPLIT_RE.split
            per_text = [[t for t in split(text.lower()) if t] for _, text in todo]
            if use_stemmer:
                per_text = [[rouge_stem(t) if len(t) > 3 else t for t in words] for words in per_text]
            ids = self._intern(per_text).astype(np.int32)
            at = 0
            for (row, _), words in zip(todo, per_text):
                store[row] = ids[at : at + len(words)].copy()
                at += len(words)
        return [store[row].tolist() for row in rows.tolist()]
