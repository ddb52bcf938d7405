"""BERTScore results cached per (scorer, candidate, references), so a rerun embeds nothing.

bert-score recomputes every token embedding on each call; scoring the 3,900 CMI-Bench captions
of one model takes over a minute on 2 CPU cores. :class:`CachedBERTScorer` wraps a configured
``bert_score.BERTScorer``: pairs already in the cache (an :class:`~musiceval.encoders.base.EmbeddingCache`,
the same on-disk store as text embeddings) are read back, the others go to the real scorer in one
call and are stored. The values are bert-score's own (P, R, F1 as float32, exactly what it
returns), so a cached value equals a computed one.

The cache key names the model (``model_type``, a hub id or a directory path), the layer and the
rescaling baseline (by the content hash of its file); a scorer with idf weighting is refused,
because its idf weights come from the whole reference corpus and a pair's value is not its own.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np


def scorer_id(scorer: Any) -> str:
    """The part of the cache key that names the scorer's model, layer and rescaling."""
    rescale = "raw"
    if scorer._rescale_with_baseline:
        baseline = Path(scorer.baseline_path)
        digest = hashlib.sha256(baseline.read_bytes()).hexdigest()[:16] if baseline.is_file() else str(baseline)
        rescale = f"baseline:{digest}"
    return f"bertscore:{scorer._model_type}:layer{scorer._num_layers}:{rescale}"


class CachedBERTScorer:
    """``score(cands, refs, batch_size=..)`` of a ``BERTScorer``, through a result cache."""

    def __init__(self, scorer: Any, cache: Any):
        if scorer._idf:
            raise ValueError("a BERTScorer with idf=True cannot be cached per pair (its idf comes from the whole corpus)")
        self.scorer, self.cache, self.id = scorer, cache, scorer_id(scorer)
        #: candidate/references pairs sent to bert-score (cache misses), for tests and benchmarks
        self.n_scored = 0

    def score(self, cands: Sequence[str], refs: Sequence[str | Sequence[str]], batch_size: int = 64):
        import torch

        keys = [json.dumps([c, [r] if isinstance(r, str) else list(r)], ensure_ascii=False) for c, r in zip(cands, refs)]
        if hasattr(self.cache, "get_many"):  # one query for the whole batch, rows validated (shape 3, finite)
            found = self.cache.get_many(self.id, keys, shape=(3,))
            values = [found.get(k) for k in keys]
        else:
            values = [self.cache.get(self.id, k) for k in keys]
        todo = [k for k, v in enumerate(values) if v is None]
        if todo:
            p, r, f = self.scorer.score([cands[k] for k in todo], [refs[k] for k in todo], batch_size=batch_size)
            new = torch.stack([p, r, f], dim=1).detach().cpu().numpy().astype(np.float32)
            for k, row in zip(todo, new):
                values[k] = row
            if hasattr(self.cache, "put_many"):
                self.cache.put_many(self.id, [(keys[k], row) for k, row in zip(todo, new)])
            else:
                for k, row in zip(todo, new):
                    self.cache.put(self.id, keys[k], row)
            self.n_scored += len(todo)
        table = torch.from_numpy(np.stack(values).astype(np.float32)) if values else torch.zeros((0, 3))
        return table[:, 0], table[:, 1], table[:, 2]
