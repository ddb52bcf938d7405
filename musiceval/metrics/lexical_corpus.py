"""Corpus-level lexical scoring: BLEU, BLEU-4, METEOR, ROUGE-L and CIDEr-D over many pairs at once.

The definitions are those of :mod:`musiceval.metrics.lexical`, :mod:`musiceval.metrics.meteor` and
:mod:`musiceval.metrics.cider` (tested against nltk, rouge-score and pycocoevalcap); this module
computes the same numbers for a whole corpus with integer arrays:

- every distinct text is tokenised once (:class:`musiceval.metrics.token_cache.TokenCache`), and
  the cache is shared by all five metrics and by every condition scored against the same
  references;
- BLEU clipping and CIDEr-D tf-idf cosines are sparse intersections of sorted (pair, n-gram id)
  keys (``numpy.searchsorted``), one per n-gram order for a whole chunk of pairs;
- CIDEr-D document frequencies are computed once per :class:`LexicalCorpus`;
- METEOR's exact and stem stages are vectorised (:func:`musiceval.metrics.meteor.meteor_rows`);
  ROUGE-L keeps the bit-parallel LCS per pair on cached token ids;
- pairs are processed in chunks (``chunk`` pairs), so the working memory is bounded by the chunk,
  not by the corpus.

Integer quantities (clipped n-gram counts, matches, chunks, LCS lengths) are exactly those of the
per-pair functions and the final formulas are the same float expressions, so BLEU, BLEU-4,
METEOR and ROUGE-L are bit-identical; CIDEr-D sums its tf-idf products in another order and
agrees to ~1e-15.
"""
from __future__ import annotations

import hashlib
import math
from typing import Sequence

import numpy as np

from musiceval.metrics.lexical import LEXICAL_METRICS, _brevity_penalty, smoothed_bleu  # noqa: F401
from musiceval.metrics.token_cache import MAX_N, TokenCache, gather, unique

CHUNK = 8192
#: the document frequencies of the last df corpus seen with ``memo_df=True`` (one entry)
_DF_MEMO: dict = {}
SIGMA = 6.0


def _as_list(refs) -> list[str]:
    return [refs] if isinstance(refs, str) else list(refs)


class LexicalCorpus:
    """The references of a set of items, tokenised once, with their CIDEr-D document frequencies.

    Score any number of conditions against it with :meth:`score`; every distinct text of every
    condition is tokenised once in ``cache``.

    Parameters
    ----------
    references : sequence of (str or sequence of str)
        The references of each item (at least one with a word token each; see
        :func:`musiceval.metrics.lexical.validate`).
    df_references : sequence, optional
        The corpus whose document frequencies CIDEr-D uses (default ``references``).
    cache : TokenCache, optional
        Shared tokenisation (default: a new one).
    use_stemmer : bool
        ROUGE-L with rouge-score's Porter stemming.
    """

    def __init__(self, references, *, df_references=None, cache: TokenCache | None = None, use_stemmer: bool = False,
                 memo_df: bool = False) -> None:
        self.cache = cache if cache is not None else TokenCache()
        self.use_stemmer = use_stemmer
        self.references = [_as_list(r) for r in references]
        empty = next((k for k, rs in enumerate(self.references) if not rs), None)
        if empty is not None:
            raise ValueError(f"item {empty} has no reference: an item needs at least one reference answer")
        self._ref_texts = [r for rs in self.references for r in rs]
        counts = np.fromiter((len(rs) for rs in self.references), dtype=np.int64, count=len(self.references))
        self._ref_ptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=self._ref_ptr[1:])
        self._ref_rows = self.cache.rows(self._ref_texts)
        self._df_source = self.references if df_references is None else [_as_list(r) for r in df_references]
        self._df: tuple[list[np.ndarray], float] | None = None
        self._df_key = None
        if memo_df:  # the same df corpus as a previous LexicalCorpus on this cache: reuse its df
            rows = self._ref_rows if df_references is None else self.cache.rows([r for rs in self._df_source for r in rs])
            sizes = np.fromiter((len(rs) for rs in self._df_source), dtype=np.int64, count=len(self._df_source))
            digest = hashlib.blake2b(rows.tobytes() + b"|" + sizes.tobytes(), digest_size=16).hexdigest()
            self._df_key = (self.cache.uid, self.cache.generation, digest)
            if _DF_MEMO.get("key") == self._df_key:
                self._df = _DF_MEMO["df"]

    def __len__(self) -> int:
        return len(self.references)

    # ----------------------------------------------------------------- CIDEr df
    def document_frequencies(self) -> tuple[list[np.ndarray], float]:
        """Per n-gram order, ``df[gram id]`` over the df corpus's items, and ``log N`` (once)."""
        if self._df is None:
            items = self._df_source
            self.cache.rows([r for rs in items for r in rs])  # every gram gets its id first
            widths = [max(1, self.cache.n_grams(n)) for n in range(1, MAX_N + 1)]
            dfs = [np.zeros(w) for w in widths]
            for lo in range(0, len(items), CHUNK):  # an item's references never span two chunks
                part = items[lo : lo + CHUNK]
                rows = self.cache.rows([r for rs in part for r in rs])
                owner_of = np.repeat(np.arange(len(part), dtype=np.int64), [len(rs) for rs in part])
                for n in range(1, MAX_N + 1):
                    ptr, ids, _ = self.cache.grams(n)
                    sub, (g,) = gather(ptr, rows, ids)
                    keys = unique(owner_of[sub] * widths[n - 1] + g)
                    dfs[n - 1] += np.bincount(keys % widths[n - 1], minlength=widths[n - 1])
            self._df = (dfs, math.log(float(len(items))) if items else 0.0)
            if self._df_key is not None:
                _DF_MEMO.clear()
                _DF_MEMO.update(key=self._df_key, df=self._df)
        return self._df

    # ----------------------------------------------------------------- scoring
    def score(self, candidates: Sequence[str], metrics: Sequence[str] = LEXICAL_METRICS, *,
              items: Sequence[int] | None = None, chunk: int = CHUNK, workers: int = 1) -> dict[str, np.ndarray]:
        """Per-pair scores of ``candidates[k]`` against the references of item ``items[k]``
        (default: item ``k``). Returns ``{metric: array}`` in the order of ``metrics``.

        ``workers > 1`` scores contiguous runs of chunks in forked processes (POSIX only) after
        tokenising in this one; results are placed by position, so they are identical to
        ``workers=1``."""
        unknown = set(metrics) - set(LEXICAL_METRICS)
        if unknown:
            raise ValueError(f"unknown lexical metrics {sorted(unknown)}; choose from {LEXICAL_METRICS}")
        item = np.arange(len(candidates), dtype=np.int64) if items is None else np.asarray(items, dtype=np.int64)
        if len(item) != len(candidates):
            raise ValueError(f"{len(candidates)} candidates but {len(item)} item indices")
        if items is None and len(candidates) != len(self.references):
            raise ValueError(f"{len(candidates)} candidates but {len(self.references)} references")
        cand_rows = self.cache.rows(list(candidates))
        if "cider" in metrics:
            self.document_frequencies()
        if "meteor" in metrics:
            from musiceval.metrics.meteor import require_wordnet

            require_wordnet()
            self.cache.stems()
        bounds = [(lo, min(len(candidates), lo + chunk)) for lo in range(0, len(candidates), chunk)]
        workers = max(1, min(int(workers), len(bounds)))
        groups = [bounds[k * len(bounds) // workers : (k + 1) * len(bounds) // workers] for k in range(workers)]

        def run(group):
            part = {m: [] for m in metrics}
            for lo, hi in group:
                scores = self._score_chunk(candidates[lo:hi], cand_rows[lo:hi], item[lo:hi], metrics)
                for m in metrics:
                    part[m].append(scores[m])
            return {m: np.concatenate(v) if v else np.zeros(0) for m, v in part.items()}

        parts = [run(groups[0])] if workers == 1 else _in_forks(run, groups)
        return {m: np.concatenate([p[m] for p in parts]) for m in metrics}

    def _score_chunk(self, candidates, cand_rows, item, metrics) -> dict[str, np.ndarray]:
        cache = self.cache
        n_pairs = len(cand_rows)
        # sub-pairs: one per (candidate, one of its references)
        sub_owner, (ref_rows,) = gather(self._ref_ptr, item, np.arange(len(self._ref_rows), dtype=np.int64))
        ref_rows = self._ref_rows[ref_rows]
        n_refs = np.bincount(sub_owner, minlength=n_pairs)
        out: dict[str, np.ndarray] = {}
        if "bleu" in metrics or "bleu4" in metrics:
            out.update(_bleu(cache, cand_rows, ref_rows, sub_owner, n_refs, metrics))
        if "cider" in metrics:
            dfs, log_n = self.document_frequencies()
            out["cider"] = _cider(cache, cand_rows, ref_rows, sub_owner, n_refs, dfs, log_n)
        if "meteor" in metrics:
            from musiceval.metrics.meteor import meteor_rows

            per_sub = meteor_rows(cache, cand_rows[sub_owner], ref_rows)
            out["meteor"] = _max_by_owner(per_sub, sub_owner, n_pairs)
        if "rouge_l" in metrics:
            from musiceval.metrics.lexical import _rouge_l_from_tokens

            hyp = cache.rouge_tokens(cand_rows, list(candidates), self.use_stemmer)
            refs = [self._ref_texts[k] for k in self._ref_index(item)]
            ref_toks = cache.rouge_tokens(ref_rows, refs, self.use_stemmer)
            owner = sub_owner.tolist()
            per_sub = np.array([_rouge_l_from_tokens(hyp[o], r) for o, r in zip(owner, ref_toks)])
            out["rouge_l"] = _max_by_owner(per_sub, sub_owner, n_pairs)
        return out

    def _ref_index(self, item: np.ndarray) -> list[int]:
        _, (idx,) = gather(self._ref_ptr, item, np.arange(len(self._ref_rows), dtype=np.int64))
        return idx.tolist()


def _in_forks(run, groups):
    """``run(group)`` for each group: the first here, the others in forked children; in order."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    children = []
    for group in groups[1:]:
        recv, send = ctx.Pipe(duplex=False)

        def target(group=group, send=send):
            try:
                from musiceval.metrics.meteor import reopen_wordnet_files

                reopen_wordnet_files()
                send.send(("ok", run(group)))
            except BaseException as exc:  # reported to the parent, never swallowed
                send.send(("error", f"{type(exc).__name__}: {exc}"))
            finally:
                send.close()

        proc = ctx.Process(target=target, daemon=True)
        proc.start()
        send.close()
        children.append((proc, recv))
    results = [run(groups[0])]
    for proc, recv in children:
        try:
            status, value = recv.recv()
        except EOFError:
            proc.join()
            status, value = "error", f"worker exited with code {proc.exitcode} before sending its scores"
        proc.join()
        if status != "ok":
            raise RuntimeError(f"lexical scoring worker failed: {value}")
        results.append(value)
    return results


def _max_by_owner(values: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    out = np.full(n, -np.inf)
    np.maximum.at(out, owner, values)
    return out


def _bleu(cache: TokenCache, cand_rows, ref_rows, sub_owner, n_refs, metrics) -> dict[str, np.ndarray]:
    """Clipped n-gram matches per pair (exact integers), then nltk's method3 formula per pair."""
    n_pairs = len(cand_rows)
    multi = bool((n_refs > 1).any())
    numerators = np.zeros((n_pairs, MAX_N), dtype=np.int64)
    for n in range(1, MAX_N + 1):
        ptr, ids, cnt = cache.grams(n)
        width = max(1, cache.n_grams(n))
        owner_c, (g_c, c_c) = gather(ptr, cand_rows, ids, cnt)
        owner_r, (g_r, c_r) = gather(ptr, ref_rows, ids, cnt)
        key_r = sub_owner[owner_r] * width + g_r
        if multi:  # max count over the references of a pair
            order = np.argsort(key_r, kind="stable")
            key_r, c_r = key_r[order], c_r[order]
            starts = np.flatnonzero(np.r_[True, key_r[1:] != key_r[:-1]]) if len(key_r) else np.zeros(0, np.int64)
            c_r = np.maximum.reduceat(c_r, starts) if len(key_r) else c_r
            key_r = key_r[starts]
        key_c = owner_c * width + g_c
        if len(key_r) == 0 or len(key_c) == 0:
            continue
        pos = np.searchsorted(key_r, key_c)
        pos[pos == len(key_r)] = 0
        hit = key_r[pos] == key_c
        clipped = np.minimum(c_c[hit], c_r[pos[hit]])
        numerators[:, n - 1] = np.bincount(owner_c[hit], weights=clipped, minlength=n_pairs).astype(np.int64)
    hyp_len = cache.lengths[cand_rows]
    ref_len = cache.lengths[ref_rows]
    # closest reference length: min (|r - h|, r) over the references of each pair
    diff = np.abs(ref_len - hyp_len[sub_owner])
    order = np.lexsort((ref_len, diff, sub_owner))
    first = np.flatnonzero(np.r_[True, sub_owner[order][1:] != sub_owner[order][:-1]])
    closest = np.zeros(n_pairs, dtype=np.int64)
    closest[sub_owner[order][first]] = ref_len[order][first]
    out = {}
    for name, weights in (("bleu", (0.25,) * 4), ("bleu4", (0.0, 0.0, 0.0, 1.0))):
        if name not in metrics:
            continue
        values = np.zeros(n_pairs)
        for k, (num, h, r) in enumerate(zip(numerators.tolist(), hyp_len.tolist(), closest.tolist())):
            if num[0] == 0:
                continue
            values[k] = smoothed_bleu(num, [max(1, h - n) for n in range(len(num))], weights, _brevity_penalty(r, h))
        out[name] = values
    return out


def _cider(cache: TokenCache, cand_rows, ref_rows, sub_owner, n_refs, dfs, log_n, sigma: float = SIGMA) -> np.ndarray:
    """CIDEr-D per pair: clipped tf-idf cosines per order and reference, length penalty, x10/4/refs."""
    n_pairs, n_sub = len(cand_rows), len(ref_rows)
    total = np.zeros(n_sub)
    len_c = np.maximum(0, cache.lengths[cand_rows] - 1)[sub_owner].astype(np.float64)
    len_r = np.maximum(0, cache.lengths[ref_rows] - 1).astype(np.float64)
    penalty = np.exp(-((len_c - len_r) ** 2) / (2 * sigma**2))
    for n in range(1, MAX_N + 1):
        ptr, ids, cnt = cache.grams(n)
        df = dfs[n - 1]
        width = max(1, cache.n_grams(n))

        def tfidf(rows):
            owner, (g, c) = gather(ptr, rows, ids, cnt)
            d = np.where(g < len(df), df[np.minimum(g, len(df) - 1)], 0.0) if len(df) else np.zeros(len(g))
            vec = c * (log_n - np.log(np.maximum(1.0, d)))
            norm = np.sqrt(np.bincount(owner, weights=vec * vec, minlength=len(rows)))
            return owner, g, vec, norm

        owner_c, g_c, v_c, norm_c = tfidf(cand_rows)
        owner_r, g_r, v_r, norm_r = tfidf(ref_rows)
        key_c = owner_c * width + g_c
        key_r = sub_owner[owner_r] * width + g_r
        val = np.zeros(n_sub)
        if len(key_c) and len(key_r):
            pos = np.searchsorted(key_c, key_r)
            pos[pos == len(key_c)] = 0
            hit = key_c[pos] == key_r
            vr = v_r[hit]
            val = np.bincount(owner_r[hit], weights=np.minimum(v_c[pos[hit]], vr) * vr, minlength=n_sub)
        nc = norm_c[sub_owner]
        ok = (nc != 0) & (norm_r != 0)
        val[ok] = val[ok] / (nc[ok] * norm_r[ok])
        total += val * penalty
    per_pair = np.bincount(sub_owner, weights=total, minlength=n_pairs)
    return per_pair / MAX_N / n_refs * 10.0


#: default cache of :func:`lexical_scores`, shared by its calls (and so by conditions scored
#: one after the other); cleared before it would hold more than this many texts
DEFAULT_CACHE_TEXTS = 200_000
_default_cache = None


def default_token_cache():
    """The module's shared :class:`~musiceval.metrics.token_cache.TokenCache`."""
    global _default_cache
    if _default_cache is None:
        _default_cache = TokenCache(max_texts=DEFAULT_CACHE_TEXTS)
    return _default_cache


def lexical_scores(
    candidates: Sequence[str],
    references: Sequence[str | Sequence[str]],
    metrics: Sequence[str] = LEXICAL_METRICS,
    *,
    df_references: Sequence[str | Sequence[str]] | None = None,
    use_stemmer: bool = False,
    cache=None,
    store=None,
) -> dict[str, np.ndarray]:
    """Score aligned (candidate, references) pairs with several lexical metrics at once.

    Inputs must already be valid (see :func:`musiceval.metrics.lexical.validate`); callers turn a ``ValueError`` there
    into a per-item failure. Each distinct text is tokenised once in ``cache`` (default: the
    module's shared :func:`default_token_cache`), so references shared by several conditions
    are processed once, and the CIDEr-D document frequencies of the last ``df_references``
    are remembered (one entry), so calls per metric or per condition compute them once.
    ``df_references`` is the reference corpus whose document frequencies CIDEr-D uses (default: ``references``). To score several conditions against the same
    references, build one :class:`LexicalCorpus` and call its
    ``score`` per condition: the CIDEr-D document frequencies are then computed once.

    Values equal the per-pair functions (:func:`~musiceval.metrics.lexical.bleu`, :func:`~musiceval.metrics.lexical.bleu4`, :func:`~musiceval.metrics.lexical.rouge_l`,
    :func:`musiceval.metrics.meteor.meteor`, :func:`musiceval.metrics.cider.cider_d`).

    ``store``: a :class:`~musiceval.metrics.lexical_cache.LexicalScoreCache`; the same call made
    before (same metrics, texts, CIDEr-D corpus and code: its key) is read from it instead of
    scored, and a new one is stored there.
    """
    unknown = set(metrics) - set(LEXICAL_METRICS)
    if unknown:
        raise ValueError(f"unknown lexical metrics {sorted(unknown)}; choose from {LEXICAL_METRICS}")
    if len(references) != len(candidates):
        raise ValueError(f"{len(candidates)} candidates but {len(references)} references")
    key = None
    if store is not None:
        from musiceval.metrics.lexical_cache import call_key

        key = call_key(candidates, references, metrics, df_references, use_stemmer)
        stored = store.get(key, metrics, len(candidates))
        if stored is not None:
            return stored
    if cache is None:
        cache = default_token_cache()
        incoming = len(candidates) + sum(1 if isinstance(r, str) else len(r) for r in references)
        if len(cache) + incoming > DEFAULT_CACHE_TEXTS:
            cache.clear()
    corpus = LexicalCorpus(references, df_references=df_references, cache=cache, use_stemmer=use_stemmer,
                           memo_df="cider" in metrics)
    scores = corpus.score(list(candidates), metrics)
    if store is not None:
        store.put(key, scores)
    return scores
