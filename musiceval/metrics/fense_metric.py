"""FENSE as a free-form metric of the metric registry (``musiceval.metrics.registry``).

:func:`register` adds ``fense`` with ``@register_metric("fense", protocol="freeform", ...)``.
The metric function takes the registry's ``(candidates, references, context)`` and gets its two
models from the context:

- ``context.embed("fense")``: texts -> unit Sentence-BERT rows (paraphrase-TinyBERT-L6-v2;
  :func:`musiceval.metrics.fense_models.load_sbert`);
- ``context.embed("fense-error")``: texts -> the error detector's probability per text, as a
  column (echecker_clotho_audiocaps_base; :func:`musiceval.metrics.fense_models.load_echecker`).

Both kinds are resolved by the context (the scorer that owns model loading and caching). Where a
context has no such kind it raises, and the registry reports the metric as not computed.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from musiceval.metrics.fense import PENALTY, THRESHOLD, fense

SBERT_KIND = "fense"
ERROR_KIND = "fense-error"
DESCRIPTION = ("FENSE (Zhou et al. 2022): mean Sentence-BERT cosine to the references (paraphrase-TinyBERT-L6-v2), "
               "times 0.1 when the fluency-error detector (echecker_clotho_audiocaps_base) gives p(error) > 0.9")


def fense_metric(candidates: Sequence[str], references: Sequence[Sequence[str]], context: Any) -> np.ndarray:
    """The registry's free-form signature around :func:`musiceval.metrics.fense.fense`."""
    embed = context.embed(SBERT_KIND)
    detector = context.embed(ERROR_KIND)

    def error_probs(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(detector(texts), dtype=float).reshape(len(texts), -1)[:, 0]

    return fense(candidates, references, embed=embed, error_probs=error_probs, penalty=PENALTY, threshold=THRESHOLD)


def register() -> None:
    """Register ``fense`` in ``musiceval.metrics.registry`` (idempotent for one process)."""
    from musiceval.metrics.registry import register_metric  # the registry module; absent in older trees
    from musiceval.stats.scales import bounded

    # Sentence-BERT cosine times (1 - 0.9 * error): in [-1, 1]
    register_metric("fense", protocol="freeform", higher_is_better=True, role="gate", unit="", replace=True,
                    scale=bounded(-1, 1),
                    description=DESCRIPTION)(fense_metric)


register()
