"""Factual QA (docs/protocols/factual.md) as a :class:`~musiceval.protocols.base.Protocol`.

Wraps :func:`musiceval.protocols.factual.engine.score_factual`: labels extracted from
each answer against the item's true labels.

- metrics ``precision``, ``recall``, ``f1`` (headline), ``accuracy`` (exact set match), with a
  hierarchy also ``same_tree_*``; ``parse_rate``: the extractor returned at least one vocabulary
  label (an answer that names none is scored, with P = R = F1 = 0 by the set rules, and listed
  in the failures as ``unparsed: ...``);
- conditions: ``correct``; ``random`` from the file's ``random`` rows, else derived: the answer
  the model gave for another clip with the same prompt (a seeded derangement,
  :func:`musiceval.conditions.random_recorded_responses`) scored against this item's labels;
  any other control recorded in the file (``noise``, ``text_only``, ``silence``) as given;
- chance of ``f1``: the permutation null (predictions permuted across items, in item-id order) and
  the best constant label set (:func:`musiceval.metrics.sets.best_constant_label_set`), paired by
  item. The derived Random is the answer permutation of "the model listens".

Options: ``vocab`` (a vocabulary name such as ``nsynth``/``gtzan`` or a file; default: the
benchmark's own, the answer set's ``benchmark``, for NSynth and CMI-Bench GTZAN files), ``extractor`` (``"rules"``, or a callable
``texts -> [(labels or None, failure or None)]`` such as :func:`musiceval.protocols.factual.engine.llm_extractor`),
``chunks`` (None, ``"any"``, ``"majority"``), ``hierarchy`` (an FMA ``genres.csv`` path or a
``child -> parent`` mapping), ``n_permutations`` (2000), ``conditions`` (("correct", "random"); ``("correct",)`` skips Random).
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from musiceval.data.answers import AnswerSet
from musiceval.keys import Key
from musiceval.protocols.factual.score import FLAGS, score_factual_file
from musiceval.protocols.scoring import ScoreReport, ScoreRequest
from musiceval.ranges import NON_NEGATIVE_INT, PERMUTATIONS, SHARE
from musiceval.metrics.sets import best_constant_label_set
from musiceval.protocols.pairing import conditions as conditions_of, model_name
from musiceval.protocols.base import CONTROL_CONDITIONS, PARSE_RATE, Chance, MetricInfo, Protocol, ProtocolSettings, register_protocol
from musiceval.exclusions import Exclusion
from musiceval.records import ItemFailure, ItemScores
from musiceval.stats.scales import BINARY, UNIT

METRIC_UNITS = {"precision": "macro precision (0-1)", "recall": "macro recall (0-1)", "f1": "macro F1 (0-1)",
                "accuracy": "exact label-set match (0-1)"}
#: what one item's value is (musiceval.stats.scales): a label set matched exactly or not; per-item
#: precision, recall and F1 of a label set in [0, 1]
METRIC_SCALES = {"precision": UNIT, "recall": UNIT, "f1": UNIT, "accuracy": BINARY}


@register_protocol
class FactualProtocol(Protocol):
    name = "factual"
    headline = "f1"
    answer_file = "a factual answer file (answers with true labels)"
    config_keys = {
        "min_parse_rate": Key((int, float), 0.5, "share of answers naming at least one vocabulary label", SHARE),
        "n_permutations": Key(int, 2000, "permutations of predictions across items for the chance level of F1 "
                              "(at most 1000000: musiceval.ranges.PERMUTATIONS)", PERMUTATIONS),
        "vocab": Key(str, "", "default closed vocabulary when an answers entry gives none"),
        "fma_small_chance": Key(float, 0.125, "uniform guessing among FMA-small's 8 balanced genres (reported)", SHARE),
        "live_max_items": Key(int, 0, "live gates: ask at most this many items per dataset (0 = all)", NON_NEGATIVE_INT),
        "prompt_variant": Key(str, "paper", "live question phrasing: paper or among", choices=("paper", "among")),
        "live_chunks": Key(str, "any", "live chunked answers: any or majority", choices=("any", "majority")),
        "live_true_false_max_items": Key(int, 50, "live true/false gate: items asked (0 = all)", NON_NEGATIVE_INT),
    }
    options_from_config = ("n_permutations", "vocab")
    answer_options = {
        "vocab": Key(str, "", "closed vocabulary: a built-in name or a vocabulary file (relative to the config)"),
        "extractor": Key(str, "rules", "label extractor"),
        "chunks": Key(str, "", "answers given per audio chunk: any or majority", choices=("", "any", "majority")),
        "hierarchy": Key(str, "", "FMA genres.csv for 'same tree' scores (relative to the config)"),
        "labels_field": Key(str, "", "field holding the true labels"),
        "n_permutations": config_keys["n_permutations"],
    }
    #: ``musiceval score factual`` (:mod:`musiceval.protocols.factual.score`)
    score_flags = FLAGS
    score_help = ("factual QA: labels extracted from answers vs true labels (P/R/F1, accuracy), Random condition, "
                  "permutation chance")

    @classmethod
    def score(cls, request: ScoreRequest) -> ScoreReport:
        return score_factual_file(cls, request)

    @classmethod
    def component_versions(cls) -> dict[str, str]:
        from musiceval.vocab.factual_prompts import PROMPT_VERSION
        from musiceval.extraction.rules import EXTRACTOR_VERSION
        from musiceval.llm.extract import PROMPT_VERSION as LLM_PROMPT_VERSION

        return {"factual_extractor": str(EXTRACTOR_VERSION), "factual_prompts": str(PROMPT_VERSION),
                "llm_extract_prompt": str(LLM_PROMPT_VERSION)}

    def __init__(self, result, data, vocab, *, controls: Mapping[str, Any] | None = None, model: str = "model",
                 source: str = "", texts: Mapping[str, Mapping[str, Any]] | None = None):
        #: the wrapped :class:`musiceval.protocols.factual.engine.FactualResult` (correct and random)
        self.result = result
        self.data = data
        self.vocab = vocab
        #: condition -> FactualResult of a recorded control other than random
        self.controls_results = dict(controls or {})
        self.model = model
        self.source = source
        self._texts = dict(texts or {})
        self.derived = ("random",) if data.random_derived and "random" in self.conditions else ()

    @classmethod
    def from_answers(cls, answers: AnswerSet, settings: ProtocolSettings | None = None) -> "FactualProtocol":
        from musiceval.extraction import load_vocabulary
        from musiceval.protocols.factual.engine import factual_sets, rule_extractor, score_factual

        settings = settings or ProtocolSettings()
        opts = settings.options
        recorded, model = conditions_of(answers), model_name(answers)
        hierarchy, vocab = opts.get("hierarchy"), opts.get("vocab")
        if isinstance(hierarchy, str):
            from musiceval.catalogue.datasets.fma import fma_genre_tree, fma_genre_vocabulary, load_fma_genres

            genres = load_fma_genres(hierarchy)
            vocab = load_vocabulary(vocab) if isinstance(vocab, str) else (vocab or fma_genre_vocabulary(genres))
            hierarchy = fma_genre_tree(genres, vocab)
        if vocab is None and answers.benchmark is not None:  # the benchmark's own (dasheng NSynth, CMI-Bench GTZAN)
            vocab = answers.benchmark.defaults.get("vocab")
        if vocab is None:
            raise ValueError(f"{answers.source or 'answers'}: no vocabulary; set the factual option 'vocab' "
                             "(nsynth, gtzan, fma-top, musicnet-instruments, musicnet-composers or a vocabulary file)")
        if isinstance(vocab, str):
            vocab = load_vocabulary(vocab)
        extractor = opts.get("extractor", "rules")
        extract = rule_extractor(vocab) if extractor in (None, "rules") else extractor
        if not callable(extract):
            raise ValueError(f"factual option 'extractor' must be 'rules' or a callable, got {extractor!r}")
        # every answer set first (Correct with its Random, file's or derived; each recorded control), then
        # each scored: a control as its own Correct, whose permutation null is never read (2 permutations)
        sets = factual_sets(answers, [c for c in CONTROL_CONDITIONS if c != "random" and c in recorded], seed=settings.seed)
        asked = tuple(opts.get("conditions", ("correct", "random")))
        n_permutations = int(opts.get("n_permutations", 2000))
        results = {condition: score_factual(data, vocab, extract, conditions=asked if condition == "correct" else ("correct",),
                                            seed=settings.seed, n_permutations=n_permutations if condition == "correct" else 2,
                                            chunks=opts.get("chunks"), hierarchy=hierarchy)
                   for condition, data in sets.items()}
        data, result = sets.pop("correct"), results.pop("correct")
        texts = {"correct": dict(zip(data.ids, data.texts))}
        if data.random_derived and result.random_partner:
            texts["random"] = {i: (t[0] if len(t) == 1 else t) for i, t in result.random_partner.items()}
        elif not data.random_derived and data.random_texts is not None:
            texts["random"] = dict(data.random_texts)
        texts.update({condition: dict(zip(cdata.ids, cdata.texts)) for condition, cdata in sets.items()})
        return cls(result, data, vocab, controls=results, model=model, source=answers.source, texts=texts)

    # ------------------------------------------------------------------ interface

    def _result_of(self, condition: str):
        """``(FactualResult, key)``: where ``condition``'s scores live."""
        if condition in self.controls_results:
            return self.controls_results[condition], "correct"
        return self.result, condition

    @property
    def conditions(self) -> tuple[str, ...]:
        out = ["correct"]
        if "random" in self.result.scores and self.result.scores["random"]["f1"].n:
            out.append("random")
        return tuple(out + [c for c in CONTROL_CONDITIONS if c in self.controls_results])

    @property
    def metrics(self) -> tuple[str, ...]:
        names = list(self.result.scores["correct"])
        return ("f1", *[m for m in names if m != "f1"], PARSE_RATE)

    @property
    def failures(self) -> list[ItemFailure]:
        return list(self.result.failures)

    def exclusions(self) -> tuple[Exclusion, ...]:
        return tuple(self.result.excluded)

    def metric_info(self, metric: str) -> MetricInfo:
        if metric == PARSE_RATE:
            return MetricInfo(PARSE_RATE, True, "share of answers naming a vocabulary label (0-1)", scale=BINARY)
        base = metric.removeprefix("same_tree_")
        return MetricInfo(metric, True, METRIC_UNITS.get(base, ""),
                          "after mapping labels to their top-level genre" if metric.startswith("same_tree_") else "",
                          scale=METRIC_SCALES.get(base))

    def scores(self, metric: str, condition: str = "correct") -> ItemScores:
        self.check(metric, condition)
        result, key = self._result_of(condition)
        f1 = result.scores[key]["f1"]
        preds = result.predictions[key]
        unparsed = [ItemFailure(i, f"unparsed: no {self.vocab.name} label named in the answer, scored 0 ({condition})")
                    for i in f1.ids if not preds[i]]
        if metric == PARSE_RATE:
            return ItemScores(PARSE_RATE, f1.ids, [float(bool(preds[i])) for i in f1.ids], groups=f1.groups,
                              condition=condition, failures=f1.failures)
        s = result.scores[key][metric]
        return ItemScores(metric, s.ids, s.values, groups=s.groups, condition=condition,
                          failures=tuple(s.failures) + tuple(unparsed))

    def chances(self, metric: str) -> tuple[Chance, ...]:
        """F1's answer-blind strategies: the permutation null (predictions permuted across items)
        and the best constant label set (one set given as the answer to every item), paired by item."""
        correct = self.result.scores["correct"]["f1"]
        if metric != "f1" or correct.n < 2 or self.result.metrics["chance"]["f1"] is None:  # one item: no null
            return ()
        null = self.result.null_f1
        truths = dict(zip(self.data.ids, self.data.truths))
        ids = sorted(correct.ids)
        group = dict(zip(correct.ids, correct.groups or correct.ids))
        labels, values = best_constant_label_set([self._canonical(truths[i]) for i in ids])
        constant = ItemScores("f1", ids, values, groups=[group[i] for i in ids], condition="best constant label set")
        return (Chance("permutation", float(null.mean()), name="permutation chance",
                       description=self.result.metrics["chance"]["method"], null=null),
                Chance("baseline", constant.mean(), name="best constant label set", scores=constant,
                       description=f"always answering {', '.join(labels) or 'nothing'}"))

    def _canonical(self, labels) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c for c in (self.vocab.canonical(x) for x in labels) if c is not None))

    def samples(self) -> Iterator[dict[str, Any]]:
        truths = dict(zip(self.data.ids, self.data.truths))
        prompts = dict(zip(self.data.ids, self.data.prompts))
        for condition in self.conditions:
            result, key = self._result_of(condition)
            per = result.scores[key]
            texts = self._texts.get(condition, {})
            for k, i in enumerate(per["f1"].ids):
                pred = result.predictions[key][i]
                yield {"item_id": i, "condition": condition, "prompt": prompts.get(i, ""), "answer": texts.get(i),
                       "parsed": list(pred), "reference": list(truths.get(i, ())),
                       "scores": {**{m: float(v.values[k]) for m, v in per.items()}, PARSE_RATE: float(bool(pred))}}
