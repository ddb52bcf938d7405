"""BERTScore with the token embeddings of each distinct text cached, so a text goes through the model once.

bert-score recomputes every token embedding on each ``score`` call: a reference scored under
Correct, Random and the other conditions is embedded once per condition, and a rerun embeds
everything again. :class:`TokenCachedBERTScorer` wraps a configured ``bert_score.BERTScorer``
and keeps each distinct text's token embeddings (and idf weights) in a cache keyed by text (an
:class:`~musiceval.encoders.embedding_cache.EmbeddingCache`, the same on-disk store as sentence embeddings,
or any object with its ``get``/``put`` interface): across conditions, metrics and runs every
distinct text is embedded once per model, and a rerun on a warm cache embeds nothing. Tokenising,
the model call and greedy matching are bert-score's own functions (``sent_encode``,
``bert_encode``, ``greedy_cos_idf``) on the inputs bert-score builds; the multi-reference maximum
and the rescaling follow bert-score's code, so values equal ``BERTScorer.score`` to float32
tolerance. docs/performance.md ("The default free-form metric set plus BERTScore, cold") has
where the time goes: the model's matrix products, all but a few percent.

The cache key names the model (``model_type``, a hub id or a directory path), the layer and the
rescaling baseline (by the content hash of its file); a scorer with idf weighting is refused,
because its idf weights come from the whole reference corpus and a text's row is not its own.
:func:`lazy_bertscorer` builds a ``BERTScorer`` whose model loads only when a text is missing from
the cache, so a warm run loads no model.
"""
from __future__ import annotations

import hashlib
import time
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from musiceval.encoders.base import (get_rows, put_rows, record_row_shape, recorded_row_shape, row_signature, same_row,
                                     warn_misstated)
from musiceval.encoders.batches import length_batches, map_batches
from musiceval.encoders.embedding_cache import shape_fits


def scorer_id(scorer: Any) -> str:
    """The part of the cache key that names the scorer's model, layer and rescaling."""
    rescale = "raw"
    if scorer._rescale_with_baseline:
        baseline = Path(scorer.baseline_path)
        digest = hashlib.sha256(baseline.read_bytes()).hexdigest()[:16] if baseline.is_file() else str(baseline)
        rescale = f"baseline:{digest}"
    return f"bertscore:{scorer._model_type}:layer{scorer._num_layers}:{rescale}"


class _LazyBERTScorer:
    """A ``bert_score.BERTScorer`` that loads its model and tokenizer at the first access that needs
    them: what :class:`TokenCachedBERTScorer` reads for a fully cached call (the cache key,
    ``device``, the rescaling baseline) is known from the arguments."""

    def __init__(self, kwargs: dict[str, Any], device: str):
        self._kwargs, self._scorer = kwargs, None
        self._model_type = self.model_type = kwargs["model_type"]
        self._num_layers = self.num_layers = kwargs["num_layers"]
        self._idf, self.all_layers, self.lang = False, False, kwargs.get("lang")
        self._rescale_with_baseline = bool(kwargs.get("rescale_with_baseline"))
        self.baseline_path, self._baseline_vals, self.device = kwargs.get("baseline_path"), None, device
        #: called with the seconds the load took, when it happens (a benchmark counts it as a one-time load)
        self.on_load = None

    #: bert-score's own reading of the baseline file (row ``num_layers``)
    baseline_vals = property(lambda self: _bertscorer_class().baseline_vals.fget(self))

    @property
    def loaded(self) -> bool:
        return self._scorer is not None

    def __getattr__(self, name: str) -> Any:  # only for what __init__ did not set: _model, _tokenizer, ...
        if name.startswith("__") or name in ("_kwargs", "_scorer"):
            raise AttributeError(name)
        if self._scorer is None:
            import time

            model, start = self.model_type, time.perf_counter()
            try:
                self._scorer = _bertscorer_class()(**self._kwargs)
            except Exception as exc:  # the files were there, but do not load (OSError, SafetensorError, ...)
                cause = (str(exc).strip().splitlines() or [""])[0][:200]
                raise FileNotFoundError(f"BERTScore model {model!r} could not be loaded at the first text missing from "
                                        f"the cache ({type(exc).__name__}: {cause}); {model_fix(model)}") from exc
            if self.on_load is not None:
                self.on_load(time.perf_counter() - start)
        return getattr(self._scorer, name)


def when_loaded(scorer: Any, callback: Any) -> None:
    """Have ``callback(seconds)`` called when ``scorer`` (a :func:`lazy_bertscorer`, or a
    :class:`TokenCachedBERTScorer` of one) loads its model; nothing for a scorer already loaded."""
    inner = scorer.scorer if isinstance(scorer, TokenCachedBERTScorer) else scorer
    if isinstance(inner, _LazyBERTScorer) and not inner.loaded:
        inner.on_load = callback


def model_fix(model: str) -> str:
    """What makes the model ``model`` (a directory or a hub id ``org/name``) loadable on this machine."""
    import os

    if os.path.isdir(model):
        return "copy the complete model (config, weights and tokenizer files) into that directory"
    if os.path.isabs(model) or model.startswith((".", "~")) or model.count("/") > 1 or os.sep != "/" and os.sep in model:
        return f"there is no directory {model!r}: pass the directory of a complete local copy of the model"
    return f"run `huggingface-cli download {model}` on a connected machine"


def _bertscorer_class():
    from bert_score import BERTScorer

    return BERTScorer


def lazy_bertscorer(**kwargs: Any) -> Any:
    """``bert_score.BERTScorer(**kwargs)`` (``model_type`` and ``num_layers`` given), loaded when
    first needed when the model's config, weights and tokenizer files are on this machine (a
    directory, or a hub id in the local Hugging Face cache) and any rescaling names its
    ``baseline_path``; otherwise loaded now, so a missing or incomplete model raises here, as
    ``BERTScorer`` does. Files that are there but do not load raise ``FileNotFoundError`` naming the
    model and the fix at the first text missing from the cache."""
    import torch

    scorer_class = _bertscorer_class()  # a missing bert-score raises ImportError now, not at the first miss
    model = kwargs["model_type"]
    local = all(_has_any(model, names) for names in _MODEL_FILES)
    if not local or kwargs.get("idf") or kwargs.get("all_layers") or (kwargs.get("rescale_with_baseline") and not kwargs.get("baseline_path")):
        return scorer_class(**kwargs)
    device = kwargs.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")  # BERTScorer's rule
    return _LazyBERTScorer(kwargs, device)


#: a model loads lazily only when one file of each group is on this machine: its config, its weights
#: and its tokenizer; with one missing it loads now, so the error comes when the scorer is built
_MODEL_FILES = (("config.json",),
                ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json"),
                ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model", "tokenizer.model"))


def _has_any(model: str, names: Sequence[str]) -> bool:
    """Whether one of ``names`` is in the model directory ``model``, or in the local Hugging Face
    cache of the hub id ``model``."""
    import os

    if os.path.isdir(model):
        return any(os.path.isfile(os.path.join(model, name)) for name in names)
    try:
        from huggingface_hub import try_to_load_from_cache

        return any(isinstance(try_to_load_from_cache(model, name), str) for name in names)
    except Exception:  # not a valid repo id, no huggingface_hub: load now and let BERTScorer say why
        return False


def token_rows(embs: Any, idf: Any, mask: Any) -> list[np.ndarray]:
    """bert-score's batch of token embeddings ``[B, L, D]`` and idf weights ``[B, L]`` as one float32
    ``[L_i, D + 1]`` row per text (its ``L_i`` tokens under ``mask``, the idf weight as the last
    column: the cached row layout), views of one array without the padding."""
    import torch

    keep = mask.bool()
    table = torch.cat([embs[keep], idf[keep][:, None].to(embs.dtype)], dim=1).float().cpu().numpy()
    ends = np.cumsum(keep.sum(dim=1).tolist()).tolist()
    return [table[start:end] for start, end in zip([0] + ends[:-1], ends)]


def release_free_heap() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim(0)``; nothing where
    there is no glibc).

    Each new batch shape makes oneDNN build and cache a GELU primitive (its primitive cache:
    https://uxlfoundation.github.io/oneDNN/dev_guide_primitive_cache.html) between the model's
    activations, and glibc's heap then keeps the holes the freed activations leave, resident: at
    3,000 pairs 1.06 GB of heap for at most 0.57 GB in use. Trimming every ``TRIM_BATCHES`` batches
    bounds that growth; every batch would fault the next batch's activations in again."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@lru_cache(maxsize=1)
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None (musl, macOS, Windows: their allocators return memory themselves)."""
    import ctypes

    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None


#: model batches between two :func:`release_free_heap` calls
TRIM_BATCHES = 8


def padded_ids(ids: Sequence[Sequence[int]], pad_token_id: int) -> tuple[Any, Any]:
    """``(input ids, attention mask)`` of token id lists padded to the longest, as bert-score's
    ``padding`` builds them (``torch.long``, ``pad_token_id`` after each text, mask 1 on its tokens)."""
    import torch

    lengths = torch.tensor([len(t) for t in ids], dtype=torch.long)
    mask = (torch.arange(int(lengths.max())).expand(len(ids), -1) < lengths[:, None]).long()
    x = torch.full(mask.shape, pad_token_id, dtype=torch.long)
    x[mask.bool()] = torch.tensor([i for t in ids for i in t], dtype=torch.long)
    return x, mask


def idf_weights(x: Any, mask: Any, specials: Sequence[int]) -> Any:
    """bert-score's idf weights when ``idf=False`` (``BERTScorer.score``'s ``idf_dict``): 1.0 for
    every token but the ``specials`` ([SEP], [CLS]), 0 for those and for padding."""
    import torch

    return (~torch.isin(x, torch.tensor(list(specials), dtype=x.dtype, device=x.device)) & mask.bool()).float()


class _RowWriter:
    """The token rows (and pooled sentence vectors) of a :class:`TokenCachedBERTScorer`'s misses,
    put into its cache in transactions of about ``WRITE_BYTES``: SQLite in WAL mode checkpoints
    the log when a commit leaves it over 1,000 pages (https://sqlite.org/wal.html#ckpt), so
    a transaction per 64-text batch (7 MB of rows) paid a checkpoint per batch: 4,000 token rows
    of 40-109 tokens (440 MB) took 4.4 s in 64-row transactions and 3.0 s in 600-row ones (64 MB;
    best of 4 each, load 5.4-6.2)."""

    def __init__(self, owner: "TokenCachedBERTScorer"):
        self.owner, self.rows, self.pooled, self.size = owner, [], [], 0

    def add(self, rows: list[tuple[str, np.ndarray]], pooled: list[tuple[str, np.ndarray]]) -> None:
        self.rows += rows
        self.pooled += pooled
        self.size += sum(r.nbytes for _, r in rows)
        if self.size >= WRITE_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write what is held: the token rows, then the pooled vectors and their row shape."""
        owner = self.owner
        with owner._timed("cache writes"):
            put_rows(owner.cache, owner.id, self.rows, revision=owner.revision)
            if self.pooled:
                put_rows(owner.cache, owner.pooled_id, self.pooled, revision=owner.revision)
                # the very encoder's vectors (same model, last layer, same pooling): its row shape is known
                record_row_shape(owner.cache, owner.pooled_id, row_signature(self.pooled[0][1]))
        self.rows, self.pooled, self.size = [], [], 0


#: the token rows written to the cache per transaction (bytes)
WRITE_BYTES = 64 << 20


#: the padded-token budget of an embedding batch, per text of ``batch_size`` (64 x 64 tokens by default)
TOKENS_PER_TEXT = 64


#: pairs are matched CHUNK_BATCHES of bert-score's batches at a time (see TokenCachedBERTScorer.score): the
#: token rows of 1,024 pairs (at most 2,048 texts; 214 MB for bench_freeform_scale's texts of 69 tokens)
CHUNK_BATCHES = 16


class TokenCachedBERTScorer:
    """``score(cands, refs, batch_size=..)`` of a ``BERTScorer`` with its token embeddings cached
    per distinct text, so a text shared by many pairs (a reference scored against every
    condition, a new candidate against an old reference) goes through the model once ever.

    Each distinct sentence's token embeddings and idf weights (bert-score's ``stats_dict`` entry:
    ``[L, D]`` plus ``[L]``, stored as one ``[L, D + 1]`` float32 row under
    ``<scorer id>#tokens``) are read from ``cache`` or computed by the model on the token ids and
    mask bert-score's ``get_bert_embedding`` builds (each missing text tokenised once, longest first,
    in batches of similar lengths: :meth:`_embed`); the greedy
    matching is bert-score's ``greedy_cos_idf`` on bert-score's own batches of pairs, then the
    multi-reference maximum and the baseline rescaling ``(x - b) / (1 - b)`` as bert-score does.
    Values equal ``BERTScorer.score`` to float32 tolerance (a text embedded in another padded batch
    may differ in the last bits). ``idf=True`` and ``all_layers=True`` are refused.

    ``pooled_id``: when the BERTScore layer is the last layer of the very model a mean-pooling
    sentence encoder uses (the bundled all-MiniLM-L6-v2 on layer 6), each embedded text's
    sentence vector (the attention-masked mean of those token embeddings, L2-normalised: what
    :class:`~musiceval.encoders.sentence.MeanPoolingEncoder` computes) is stored too, under that
    encoder's id, for texts within its ``pooled_max_tokens`` (longer ones it truncates, so they
    are left to it). A run scoring BERTScore and sentence cosine then runs the model once per text,
    not twice; the vectors differ from the encoder's own by float32 rounding (another padded batch).
    """

    def __init__(self, scorer: Any, cache: Any, *, pooled_id: str | None = None, pooled_max_tokens: int = 256):
        if scorer._idf:
            raise ValueError("a BERTScorer with idf=True cannot be cached per text (its idf comes from the whole corpus)")
        if getattr(scorer, "all_layers", False):
            raise ValueError("TokenCachedBERTScorer supports one layer (all_layers=False)")
        self.scorer, self.cache = scorer, cache
        self.pooled_id, self.pooled_max_tokens = pooled_id, pooled_max_tokens
        self.id = scorer_id(scorer) + "#tokens"
        #: distinct texts embedded by the model (cache misses), and rows read from the cache (a text
        #: in several chunks of one call is read once per chunk), for tests and benchmarks
        self.n_embedded = self.n_read = 0
        #: seconds spent in the model (tokenising included), cache reads and writes, and greedy matching
        self.seconds = dict.fromkeys(("model", "cache reads", "cache writes", "matching"), 0.0)
        from musiceval.encoders.facts import model_facts

        # what the weights state, read without loading them: rows of another width or revision are refused
        hidden, self.revision = model_facts(str(scorer._model_type))
        self.width: tuple[int, ...] | None = (-1, hidden + 1) if hidden else None

    def _stats(self, sentences: list[str], batch_size: int) -> dict[str, Any]:
        """``{text: [L, D + 1] tensor}`` (token embeddings, then the idf weight as the last column):
        cached rows as they are read, the others embedded once and stored.

        A cached row is used only when it is the model's own, as for sentence embeddings
        (:func:`~musiceval.encoders.base._distinct_rows`): rows of another width than the recorded
        one are misses, and under an id with no recorded width one cached row is embedded again
        and compared first (all rows are recomputed when it differs).

        Missing texts are embedded longest first by token count (bert-score sorts by word count;
        by tokens, batches carry less padding), at most ``batch_size`` texts and
        ``batch_size * TOKENS_PER_TEXT`` padded tokens per batch
        (:func:`~musiceval.encoders.batches.length_batches`)."""
        import torch

        recorded = recorded_row_shape(self.cache, self.id)
        expect = self.width or recorded
        with self._timed("cache reads"):
            found = get_rows(self.cache, self.id, sentences, shape=expect or (-1, -1), revision=self.revision)
        found = {s: v for s, v in found.items() if v.shape[0] >= 1 and v.shape[1] >= 2}
        self.n_read += len(found)
        fresh: dict[str, Any] = {}
        if found and recorded is None:  # nothing says this model wrote these rows: check one
            probe = next(iter(found))
            fresh = self._embed([probe], batch_size)
            if not same_row(fresh[probe], found[probe]):
                import warnings

                warnings.warn(f"embedding cache {getattr(self.cache, 'path', self.cache)}: the rows under {self.id} are "
                              "not this model's (a cached row differs from the one it computes); recomputed and "
                              "overwritten", stacklevel=3)
                found = {}
        fresh.update(self._embed([s for s in sentences if s not in found and s not in fresh], batch_size))
        if fresh:
            width = row_signature(next(iter(fresh.values())))
            if self.width is not None and not shape_fits(width, self.width):
                warn_misstated(self.id, self.width, width)
            # rows cached under the width the model had before (other weights under the same id)
            fresh.update(self._embed([s for s, v in found.items() if s not in fresh and not shape_fits(v.shape, width)],
                                     batch_size))
            found.update(fresh)
            if width != recorded:
                record_row_shape(self.cache, self.id, width)
        return {s: torch.from_numpy(v) for s, v in found.items()}

    def _embed(self, missing: list[str], batch_size: int) -> dict[str, np.ndarray]:
        """``{text: [L, D + 1] row}`` of ``missing`` from the model, stored in the cache.

        Each text is tokenised once, by bert-score's own ``sent_encode``; the model runs on
        batches of similar token counts (:func:`~musiceval.encoders.batches.length_batches`) through
        bert-score's ``bert_encode``, on exactly the token ids and attention mask bert-score's
        ``get_bert_embedding`` builds for them, so a row is bert-score's up to the last bits of
        another padded batch. Rows are written in transactions of about ``WRITE_BYTES``
        (:class:`_RowWriter`): a transaction per batch made SQLite checkpoint its WAL at every batch.
        Batches run side by side on the CPU's threads (:func:`~musiceval.encoders.batches.map_batches`)."""
        from bert_score.utils import bert_encode, sent_encode

        if not missing:
            return {}
        tok, model, device = self.scorer._tokenizer, self.scorer._model, self.scorer.device
        with self._timed("model"):
            ids = [sent_encode(tok, s) for s in missing]  # (a lazily built scorer loads at the first missing text)
        specials = [t for t in (tok.sep_token_id, tok.cls_token_id) if t is not None]

        def forward(idx: list[int]) -> tuple[list[tuple[str, np.ndarray]], list[tuple[str, np.ndarray]]]:
            x, mask = (t.to(device) for t in padded_ids([ids[i] for i in idx], tok.pad_token_id))
            embs = bert_encode(model, x, attention_mask=mask)
            rows = list(zip([missing[i] for i in idx], token_rows(embs, idf_weights(x, mask, specials), mask)))
            return rows, self._pooled(embs, mask, rows)

        out: dict[str, np.ndarray] = {}
        writer = _RowWriter(self)
        batches = length_batches([len(t) for t in ids], max_texts=batch_size, max_tokens=batch_size * TOKENS_PER_TEXT)
        results = map_batches(forward, batches, device=device)
        for k, idx in enumerate(batches, start=1):
            if k % TRIM_BATCHES == 0:
                release_free_heap()
            with self._timed("model"):  # waiting for the batch (the next ones run meanwhile)
                rows, pooled = next(results)
            out.update(rows)
            writer.add(rows, pooled)
            self.n_embedded += len(idx)
        writer.flush()
        return out

    @contextmanager
    def _timed(self, part: str):
        """Add the seconds the block takes to ``seconds[part]``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[part] += time.perf_counter() - start

    def _pooled(self, embs: Any, mask: Any, rows: list[tuple[str, np.ndarray]]) -> list[tuple[str, np.ndarray]]:
        """The batch's sentence vectors for ``pooled_id`` (MeanPoolingEncoder's masked mean, then L2),
        for the texts within ``pooled_max_tokens``; none without a ``pooled_id``."""
        from musiceval.encoders.base import l2_normalise
        from musiceval.encoders.sentence import masked_mean

        keep = [j for j, (_, row) in enumerate(rows) if row.shape[0] <= self.pooled_max_tokens] if self.pooled_id else []
        if not keep:
            return []
        vectors = l2_normalise(masked_mean(embs[keep].float(), mask[keep]).cpu().numpy()).astype("float32")
        return [(rows[j][0], v) for j, v in zip(keep, vectors)]

    def score(self, cands: Sequence[str], refs: Sequence[str | Sequence[str]], batch_size: int = 64):
        """``(P, R, F1)`` tensors as ``BERTScorer.score(cands, refs)`` returns them (one reference or
        a list of references per candidate: the max over the list, bert-score's rule)."""
        import torch
        from torch.nn.utils.rnn import pad_sequence

        from bert_score.utils import greedy_cos_idf

        cands, owner = list(cands), None
        flat_c, flat_r = cands, list(refs)
        if refs and not isinstance(refs[0], str):
            owner, flat_c, flat_r = [], [], []
            for k, (cand, group) in enumerate(zip(cands, refs)):
                group = [group] if isinstance(group, str) else list(group)
                owner += [k] * len(group)
                flat_c += [cand] * len(group)
                flat_r += group
        device = self.scorer.device
        stats: dict[str, Any] = {}

        def pad(batch):
            """bert-score's padded (embeddings, mask, idf): embeddings padded with 2.0, idf with 0."""
            rows = pad_sequence([stats[s].to(device) for s in batch], batch_first=True, padding_value=2.0)
            lens = torch.tensor([stats[s].size(0) for s in batch], dtype=torch.long)
            mask = (torch.arange(rows.size(1)).expand(len(batch), rows.size(1)) < lens.unsqueeze(1)).to(device)
            return rows[..., :-1], mask, rows[..., -1] * mask

        def match(start: int) -> Any:
            """bert-score's greedy matching of the pairs ``start`` to ``start + batch_size``: ``[B, 3]`` (P, R, F1)."""
            p, r, f = greedy_cos_idf(*pad(flat_r[start:start + batch_size]), *pad(flat_c[start:start + batch_size]), False)
            return torch.stack((p, r, f), dim=-1).cpu().float()

        # pairs in bert-score's batches (input order, batch_size at a time): its greedy matching
        # lets a padded position (similarity 0) win a token's max when all the token's real
        # similarities are negative, so a value depends on the longest text of its batch; the same
        # batches give the same values (sorting pairs by length changed unrelated pairs by up to 1e-3)
        # the token embeddings of CHUNK_BATCHES batches at a time: memory stays bounded by a chunk,
        # not the corpus (a chunk's texts are embedded or read from the cache, then dropped); the
        # batches of a chunk are matched side by side on the CPU's threads (map_batches)
        preds = []
        chunk = batch_size * CHUNK_BATCHES
        with torch.no_grad():
            for first in range(0, len(flat_r), chunk):
                stats = self._stats(list(dict.fromkeys(flat_r[first:first + chunk] + flat_c[first:first + chunk])), batch_size)
                with self._timed("matching"):
                    preds += map_batches(match, range(first, min(first + chunk, len(flat_r)), batch_size), device=device)
                stats.clear()  # this chunk's rows are freed before the next chunk's are read
                release_free_heap()
        table = torch.cat(preds, dim=0) if preds else torch.zeros((0, 3))
        if owner is not None:  # P, R and F1 each maximised over a candidate's references
            index = torch.tensor(owner, dtype=torch.long).unsqueeze(1).expand(-1, 3)
            table = torch.zeros((len(cands), 3)).scatter_reduce_(0, index, table, reduce="amax", include_self=False)
        if self.scorer._rescale_with_baseline:
            table = (table - self.scorer.baseline_vals) / (1 - self.scorer.baseline_vals)
        return table[:, 0], table[:, 1], table[:, 2]
