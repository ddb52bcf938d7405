"""What scoring one CMI-Bench task produces (:class:`TaskResult`), shared by
:mod:`musiceval.protocols.mir.metrics.tasks` and the families it dispatches to."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from musiceval.records import ItemFailure, ItemScores
from musiceval.schemas import OutputRecord


@dataclass(frozen=True)
class BlindStrategy:
    """An answer-blind strategy scored per item like the model's answers (docs/gate-your-model.md, "What the
    verdict means"): what it sends (``description``) and its per-item ``scores`` (paired by item id)."""

    name: str
    description: str
    scores: ItemScores


@dataclass
class TaskResult:
    """Everything one task's scoring produced."""

    task: str
    compat: str | None
    n: int
    metrics: dict[str, float]
    #: per-item scores by metric name (the units gates consume)
    per_item: dict[str, ItemScores] = field(default_factory=dict)
    #: per-item scores of the task's trivial baseline, by metric name
    baseline: dict[str, ItemScores] = field(default_factory=dict)
    #: aggregate metrics of the trivial baseline
    baseline_metrics: dict[str, float] = field(default_factory=dict)
    #: per metric: answer-blind strategies beyond the trivial baseline (tagging: the tag-frequency
    #: ranking and the file's most common response, each sent as every item's answer)
    answer_blind: dict[str, list[BlindStrategy]] = field(default_factory=dict)
    failures: list[ItemFailure] = field(default_factory=list)
    #: per-label breakdowns (per genre / instrument / technique / tag)
    breakdown: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: the models behind model-based metrics, set by the caller that loaded them (e.g. BERTScore)
    models: dict[str, Any] = field(default_factory=dict)


def item_scores(metric: str, records: Sequence[OutputRecord], values: Sequence[float], keep: Sequence[bool] | None = None) -> ItemScores:
    """The per-item scores of ``records`` (those ``keep`` marks, default all) under ``metric``."""
    keep = [True] * len(records) if keep is None else list(keep)
    return ItemScores(
        metric=metric,
        ids=tuple(r.item_id for r, k in zip(records, keep) if k),
        values=np.array([v for v, k in zip(values, keep) if k], dtype=float),
        groups=tuple(r.group for r, k in zip(records, keep) if k),
    )
