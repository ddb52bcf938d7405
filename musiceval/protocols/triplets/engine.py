"""Musical knowledge of a text encoder on AudioSet triplets (docs/protocols/text-encoders.md): the engine of
:class:`musiceval.protocols.triplets.TripletProtocol` and ``musiceval score triplets``
(:mod:`musiceval.protocols.triplets.score`).

:func:`evaluate_triplets` is the library entry point (the evals use it): it renders every triplet
under every prompt (or text variant), embeds each distinct string once through
:func:`musiceval.encoders.embed_distinct`, and compares in bulk with
:func:`musiceval.metrics.triplets.triplet_correct_indexed`.

Modes (``--prompts``): ``paper`` (the 20 prompts, ordinary triplets), ``negation`` (the 4 negation
prompts, negation triplets), ``label``, ``definition``, ``label+definition`` (one condition each,
ordinary triplets). Triplets of the other kind in a file are counted in ``n_other_kind``, not
scored. A triplet whose label has no ontology description fails in the definition modes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from musiceval.vocab.audioset import SUBTREE_ROOTS, load_ontology
from musiceval.protocols.triplets.formats import (
    TripletSet,
    generate_triplets,
    load_triplet_csv,
    negation_triplets,
    sample_triplets,
)
import musiceval.encoders.layer  # noqa: F401  (registers the layer: and bertscore: encoders)
from musiceval.encoders import EmbeddingCache, TextEncoder, embed_by_length
from musiceval.metrics.triplets import (
    NEGATION_PROMPTS,
    PAPER_PROMPTS,
    VARIANTS,
    label_text,
    mean_std_across_prompts,
    render_triplet,
    triplet_correct_indexed,
)
from musiceval.records import ItemFailure, ItemScores
from musiceval.stats.scales import BINARY, UNIT, Scale

MODES = ("paper", "negation", *VARIANTS)


@dataclass(frozen=True)
class TripletEvaluation:
    """Per-triplet correctness under each condition (a prompt or a text variant)."""

    mode: str
    ids: tuple[str, ...]
    anchors: tuple[str, ...]
    correct: Mapping[str, np.ndarray]
    failures: tuple[ItemFailure, ...] = ()
    n_other_kind: int = 0

    @property
    def n(self) -> int:
        return len(self.ids)

    def per_prompt(self) -> dict[str, float]:
        return {c: float(v.mean()) if v.size else float("nan") for c, v in self.correct.items()}

    @property
    def scale(self) -> Scale:
        """What one triplet's value is: right or wrong under one prompt condition, the share of the
        conditions that order it right under several (:mod:`musiceval.stats.scales`)."""
        return BINARY if len(self.correct) == 1 else UNIT

    def item_scores(self, metric: str = "triplet_accuracy") -> ItemScores:
        """Per triplet, the fraction of conditions under which it is correct; clustered by anchor."""
        values = np.mean(np.stack(list(self.correct.values())), axis=0) if self.n else np.zeros(0)
        return ItemScores(metric, self.ids, values, groups=self.anchors, condition=self.mode, failures=self.failures)

    def summary(self) -> dict:
        per_prompt = self.per_prompt()
        mean, std = mean_std_across_prompts(per_prompt) if self.n else (float("nan"), float("nan"))
        return {"mean": mean, "std": std, "per_prompt": per_prompt}


def _conditions(mode: str) -> tuple[str, ...]:
    if mode == "paper":
        return PAPER_PROMPTS
    if mode == "negation":
        return NEGATION_PROMPTS
    if mode in VARIANTS:
        return (mode,)
    raise ValueError(f"unknown prompt mode {mode!r}; expected one of {MODES}")


def evaluate_triplets(
    encoder: TextEncoder,
    triplets: TripletSet,
    mode: str = "paper",
    *,
    definitions: Mapping[str, str] | None = None,
    cache: EmbeddingCache | None = None,
    prompts: Sequence[str] | None = None,
    progress: bool = False,
) -> TripletEvaluation:
    """Score ``triplets`` with ``encoder`` under every condition of ``mode``.

    ``definitions`` maps label -> description (needed by the ``definition`` modes; see
    :func:`musiceval.vocab.audioset.definitions`). ``prompts`` restricts ``paper``/``negation``
    to a subset of their prompts. ``progress``: a bar on stderr over the distinct texts embedded
    (:mod:`musiceval.progress`; still off unless enabled there).
    """
    conditions = _conditions(mode)
    if prompts is not None:
        unknown = [p for p in prompts if p not in conditions]
        if unknown:
            raise ValueError(f"prompts {unknown} are not prompts of mode {mode!r}")
        conditions = tuple(prompts)
    negation = mode == "negation"
    chosen = [t for t in triplets.triplets if t.negated == negation]
    n_other = len(triplets) - len(chosen)
    failures = list(triplets.failures)
    defs = dict(definitions or {})
    if mode in ("definition", "label+definition"):
        kept = []
        for t in chosen:
            missing = [lab for lab in (t.anchor, t.positive, t.negative) if not defs.get(lab)]
            if missing:
                failures.append(ItemFailure(t.id, f"no ontology definition for {missing}"))
            else:
                kept.append(t)
        chosen = kept

    labels = list(dict.fromkeys(lab for t in chosen for lab in (t.anchor, t.positive, t.negative)))
    position = {lab: i for i, lab in enumerate(labels)}
    a, p, n = (np.array([position[getattr(t, r)] for t in chosen], dtype=np.int64) for r in ("anchor", "positive", "negative"))
    as_anchor_or_positive = set(a.tolist()) | set(p.tolist())
    as_negative = set(n.tolist())
    strings: dict[str, int] = {}  # distinct text -> row of the embedding matrix

    def rows(texts: list[str], used: set[int]) -> np.ndarray:
        return np.array([strings.setdefault(s, len(strings)) if i in used else -1 for i, s in enumerate(texts)], dtype=np.int64)

    plan: dict[str, tuple[np.ndarray, ...]] = {}
    for cond in conditions:
        # Render per label, not per triplet: a label's text depends only on the condition and on
        # whether it stands as a (negated) negative, so each text is formed and embedded once.
        if mode in VARIANTS:
            ap_texts = neg_texts = [label_text(lab, mode, defs.get(lab)) for lab in labels]
        else:
            rendered = [render_triplet(lab, lab, lab, prompt=cond, negated=negation) for lab in labels]
            ap_texts, neg_texts = [r[0] for r in rendered], [r[2] for r in rendered]
        ap_rows, neg_rows = rows(ap_texts, as_anchor_or_positive), rows(neg_texts, as_negative)
        plan[cond] = (ap_rows[a], ap_rows[p], neg_rows[n])
    embeddings = _embed(encoder, list(strings), cache, progress) if strings else np.zeros((0, 1))
    correct = {cond: triplet_correct_indexed(embeddings, *idx) for cond, idx in plan.items()}
    return TripletEvaluation(
        mode=mode,
        ids=tuple(t.id for t in chosen),
        anchors=tuple(t.anchor for t in chosen),
        correct=correct,
        failures=tuple(failures),
        n_other_kind=n_other,
    )


#: distinct texts embedded per progress step of ``score triplets``
PROGRESS_CHUNK = 512


def _embed(encoder: TextEncoder, texts: list[str], cache, show: bool) -> np.ndarray:
    """:func:`embed_by_length` of ``texts``; with ``show``, in chunks of the length-sorted texts
    (so each chunk pads as little as one call would) with a progress bar."""
    if not show:
        return embed_by_length(encoder, texts, cache=cache)
    from musiceval import progress

    order = sorted(range(len(texts)), key=lambda k: len(texts[k]))
    parts = []
    with progress.bar(len(texts), desc=f"triplets {getattr(encoder, 'id', 'encoder')}", unit="text") as bar:
        for start in range(0, len(order), PROGRESS_CHUNK):
            chunk = order[start : start + PROGRESS_CHUNK]
            parts.append(embed_by_length(encoder, [texts[k] for k in chunk], cache=cache))
            bar.update(len(chunk))
    rows = np.concatenate(parts)
    out = np.empty_like(rows)
    out[order] = rows
    return out


def load_triplets(source: str, *, mode: str = "paper", ontology=None, seed: int = 0, max_triplets: int | None = None) -> TripletSet:
    """``genre``/``instrument`` (generated from the ontology; negation triplets in negation mode)
    or the path of a triplet CSV."""
    if source in SUBTREE_ROOTS:
        subtree = (ontology or load_ontology()).subtree(source)
        make = negation_triplets if mode == "negation" else generate_triplets
        return make(subtree, seed=seed, max_triplets=max_triplets, name=source)
    return sample_triplets(load_triplet_csv(source), max_triplets, seed=seed)
