"""Registry of pairwise free-form metrics: one decorator adds a metric to every consumer.

A metric is a pure function ``fn(candidates, references, context) -> np.ndarray`` (one value
per candidate): ``candidates`` are the model's answers, ``references[k]`` the non-empty list of
references of candidate ``k``; ``context`` (:class:`MetricContext`) offers plain callables for
what a model-based metric needs (text embeddings, BERTScore, the corpus of references for
document frequencies), never cache objects or files, so the function stays testable on plain
data. Registering a name makes it a metric of the free-form protocol
(:class:`musiceval.protocols.freeform.FreeformProtocol`) and of ``musiceval score freeform
--metrics NAME``::

    from sacrebleu.metrics import CHRF
    from musiceval.metrics.registry import register_metric
    from musiceval.stats.scales import bounded

    @register_metric("chrf", role="finding", unit="chrF (0-100)", description="character n-gram F-score",
                     scale=bounded(0, 100))
    def chrf(candidates, references, context):
        scorer = CHRF()
        return np.array([scorer.sentence_score(c, r).score for c, r in zip(candidates, references)])

``scale`` (:mod:`musiceval.stats.scales`) says what one value is: 0/1 outcomes (``BINARY``) or a
number in a known range (``bounded(0, 100)``); the gates choose their interval by it, never by the
values (a chrF of 0 or 1 on every item is not a proportion). ``role`` is ``"gate"`` (compared by release gates by default) or ``"finding"`` (recorded with its
interval, never failing; the n-gram metrics, whose Correct-vs-Random gap is the paper's negative
result). A package outside musiceval registers its module under the entry-point group
``musiceval.metrics``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from musiceval.registry import Registry
from musiceval.stats.scales import Scale

MetricFn = Callable[[list, list, "MetricContext"], np.ndarray]


def _missing(what: str) -> Callable:
    def fail(*_args, **_kwargs):
        raise ValueError(f"this metric context has no {what}; score the metric through the free-form protocol")

    return fail


@dataclass(frozen=True)
class MetricContext:
    """What a metric function may call (all plain callables; see the module docstring).

    - ``embed(kind)``: ``texts -> rows`` (L2-normalised) of the ``"sentence"`` encoder or the
      ``"clap"`` text tower; each distinct text embedded once per run;
    - ``similarity(kind)``: ``(candidates, references) -> cosine`` per pair, max over each
      candidate's references, 0 for an empty candidate (:func:`musiceval.metrics.embedding.text_similarity`);
    - ``bertscore(candidates, references)``: BERTScore F1 per pair (bert-score's max over references);
    - ``audio_similarity(candidates, item_ids)``: cos(CLAP text of the answer, CLAP audio of the
      item's own clip), for reference-free metrics;
    - ``df_references``: the references of every loaded item (CIDEr-D document frequencies,
      the same for every condition so per-item values pair across conditions);
    - ``item_ids``: the ids of the items scored in this call, aligned with ``candidates``;
    - ``lexical_cache``: the lexical metrics' on-disk scores
      (:class:`~musiceval.metrics.lexical_cache.LexicalScoreCache`), or None.
    """

    embed: Callable[[str], Callable[[Sequence[str]], np.ndarray]] = field(default=_missing("text encoder"))
    similarity: Callable[[str], Callable[[Sequence[str], Sequence], np.ndarray]] = field(default=_missing("text encoder"))
    bertscore: Callable[[Sequence[str], Sequence], np.ndarray] = field(default=_missing("BERTScore model"))
    audio_similarity: Callable[[Sequence[str], Sequence[str]], np.ndarray] = field(default=_missing("CLAP audio"))
    df_references: Sequence[Sequence[str]] | None = None
    item_ids: tuple[str, ...] = ()
    #: where the lexical metrics keep their scores between runs (a LexicalScoreCache), or None
    lexical_cache: Any = None


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric: its function and what its numbers mean."""

    name: str
    fn: MetricFn
    protocol: str = "freeform"
    higher_is_better: bool = True
    role: str = "gate"
    unit: str = ""
    description: str = ""
    #: scored against the item's own audio instead of its references (CLAPAudio)
    reference_free: bool = False
    #: needs a model (embeddings, BERTScore, CLAP): the protocol loads it lazily
    model_based: bool = False
    #: bumped by the metric's author when its values change (recorded in the run's provenance)
    version: str = ""
    #: what one item's value is (0/1 outcomes or a number in a known range,
    #: :mod:`musiceval.stats.scales`): the gates' intervals follow it (None: read from the values)
    scale: Scale | None = None


METRICS: Registry[MetricSpec] = Registry(
    "metric",
    builtin_modules=("musiceval.metrics.freeform_metrics", "musiceval.metrics.fense_metric"),
    entry_point_group="musiceval.metrics",
)


def register_metric(name: str, *, protocol: str = "freeform", higher_is_better: bool = True, role: str = "gate",
                    unit: str = "", description: str = "", reference_free: bool = False, model_based: bool = False,
                    version: str = "", replace: bool = False, scale: Scale | None = None
                    ) -> Callable[[MetricFn], MetricFn]:
    """Decorator: register ``fn(candidates, references, context) -> np.ndarray`` as metric ``name``.
    ``version`` (bump it when the metric's values change) goes into every run's provenance, so runs
    scored by two versions of a metric are refused as not comparable. ``scale`` declares what one
    item's value is (:data:`~musiceval.stats.scales.BINARY` for 0/1 outcomes,
    :func:`~musiceval.stats.scales.bounded` for a known range): the gates' intervals follow it."""
    if role not in ("gate", "finding"):
        raise ValueError(f"metric {name!r}: role must be 'gate' or 'finding', got {role!r}")

    def wrap(fn: MetricFn) -> MetricFn:
        doc = description or (fn.__doc__ or "").strip().split("\n")[0]
        METRICS.register(name, MetricSpec(name, fn, protocol, higher_is_better, role, unit, doc, reference_free, model_based,
                                          version, scale), replace=replace)
        return fn

    return wrap


def metric_names(protocol: str = "freeform") -> list[str]:
    """Registered metric names of ``protocol``, in registration order (builtins first)."""
    return [n for n, spec in METRICS.items() if spec.protocol == protocol]


def get_metric(name: str) -> MetricSpec:
    return METRICS.get(name)
