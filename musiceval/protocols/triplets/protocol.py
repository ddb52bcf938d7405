"""Text-encoder triplets (docs/protocols/text-encoders.md) as a :class:`~musiceval.protocols.base.Protocol`.

Wraps :func:`musiceval.protocols.triplets.engine.evaluate_triplets` (the docs/protocols/text-encoders.md rule):
per triplet, the
fraction of prompts under which the anchor is closer to the positive than to the negative
(``accuracy``, clustered by anchor). There is no model answer to parse, so no ``parse_rate``;
chance is 0.5 (a random encoder orders a pair either way).

Build with :meth:`TripletProtocol.from_encoder` (``encoder_spec`` as ``musiceval score triplets
--encoder``: ``minilm``, ``st:DIR``, ``clap:...``, ``layer:DIR@N``; ``subtree_or_csv``: ``genre``,
``instrument`` or a triplet CSV) or directly from a :class:`~musiceval.protocols.triplets.engine.TripletEvaluation`.

Options: ``mode`` ("paper", "negation", "label", "definition", "label+definition"), ``prompts``
(indices into the mode's prompts; default all), ``max_triplets`` (a seeded sample), ``cache_dir``
(on-disk embedding cache), ``ontology`` (AudioSet ontology.json; default the bundled copy).
"""
from __future__ import annotations

from typing import Any, Iterator

from musiceval.protocols.base import Chance, MetricInfo, Protocol, ProtocolSettings, register_protocol
from musiceval.protocols.scoring import ScoreReport, ScoreRequest
from musiceval.protocols.triplets.score import FLAGS, score_triplets
from musiceval.records import ItemFailure, ItemScores


@register_protocol
class TripletProtocol(Protocol):
    name = "triplets"
    headline = "accuracy"
    #: ``musiceval score triplets`` reads no answer file: it probes the ``--encoder`` on ``--triplets``
    score_flags = FLAGS
    score_help = "triplet accuracy of a text encoder on AudioSet music triplets"

    @classmethod
    def score(cls, request: ScoreRequest) -> ScoreReport:
        return score_triplets(request)

    def __init__(self, evaluation, *, model: str = "encoder", source: str = ""):
        #: the wrapped :class:`musiceval.protocols.triplets.engine.TripletEvaluation`
        self.evaluation = evaluation
        self.model = model
        self.source = source

    @classmethod
    def from_encoder(cls, encoder_spec: str, subtree_or_csv: str, *, settings: ProtocolSettings | None = None,
                     encoder=None) -> "TripletProtocol":
        from musiceval.vocab.audioset import SUBTREE_ROOTS, definitions, load_ontology
        from musiceval.encoders import EmbeddingCache, load_text_encoder
        from musiceval.metrics.triplets import NEGATION_PROMPTS, PAPER_PROMPTS
        from musiceval.protocols.triplets.engine import evaluate_triplets, load_triplets

        settings = settings or ProtocolSettings()
        opts = settings.options
        mode = str(opts.get("mode", "paper"))
        needs_ontology = subtree_or_csv in SUBTREE_ROOTS or mode in ("definition", "label+definition")
        ontology = load_ontology(opts.get("ontology")) if needs_ontology else None
        triplets = load_triplets(str(subtree_or_csv), mode=mode, ontology=ontology, seed=settings.seed,
                                 max_triplets=opts.get("max_triplets"))
        prompts = opts.get("prompts")
        if prompts is not None and mode in ("paper", "negation"):
            pool = PAPER_PROMPTS if mode == "paper" else NEGATION_PROMPTS
            prompts = [pool[int(k)] if not isinstance(k, str) else k for k in prompts]
        encoder = encoder or load_text_encoder(encoder_spec)
        cache = EmbeddingCache(opts["cache_dir"]) if opts.get("cache_dir") else None
        evaluation = evaluate_triplets(encoder, triplets, mode, definitions=definitions(ontology) if ontology is not None else None,
                                       cache=cache, prompts=prompts)
        return cls(evaluation, model=encoder_spec, source=str(subtree_or_csv))

    @classmethod
    def from_answers(cls, answers, settings=None) -> "TripletProtocol":
        raise TypeError("the triplets protocol probes a text encoder, not answers: use "
                        "TripletProtocol.from_encoder(encoder_spec, subtree_or_csv, settings=...)")

    @property
    def conditions(self) -> tuple[str, ...]:
        return ("correct",)

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("accuracy",)

    @property
    def failures(self) -> list[ItemFailure]:
        return list(self.evaluation.failures)

    def metric_info(self, metric: str) -> MetricInfo:
        return MetricInfo("accuracy", True, "triplet accuracy (0-1)", "anchor closer to the positive than to the negative",
                          scale=self.evaluation.scale)

    def scores(self, metric: str = "accuracy", condition: str = "correct") -> ItemScores:
        self.check(metric, condition)
        s = self.evaluation.item_scores()
        return ItemScores("accuracy", s.ids, s.values, groups=s.groups, condition="correct", failures=s.failures)

    def chances(self, metric: str) -> tuple[Chance, ...]:
        return (Chance("fixed", 0.5, name="chance 1/2", description="a random encoder orders each pair either way"),)

    def evaluate(self) -> dict[str, Any]:
        out = super().evaluate()
        summary = self.evaluation.summary()
        out = {"accuracy": out["accuracy"], "std": summary["std"], "per_prompt": summary["per_prompt"],
               **{k: out[k] for k in ("n", "n_failed", "failures")}}
        return out

    def samples(self) -> Iterator[dict[str, Any]]:
        s = self.evaluation.item_scores()
        for k, (i, anchor) in enumerate(zip(self.evaluation.ids, self.evaluation.anchors)):
            yield {"item_id": i, "condition": "correct", "prompt": None, "answer": None,
                   "parsed": {c: bool(v[k]) for c, v in self.evaluation.correct.items()}, "reference": anchor,
                   "scores": {"accuracy": float(s.values[k])}}
