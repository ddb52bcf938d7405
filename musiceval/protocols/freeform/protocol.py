"""Free-form QA (protocol 1) as a :class:`~musiceval.protocols.base.Protocol`.

Wraps :class:`musiceval.protocols.freeform.engine.FreeformEvaluation`. Metrics are every
metric registered for the free-form protocol in :data:`musiceval.metrics.registry.METRICS`
(the builtins bleu, bleu4, meteor, rouge_l, cider, bertscore, clap_text, clap_audio,
sentence_cosine, plus any registered by another module), and ``parse_rate``: the answer is a
non-empty string.

Conditions: ``correct``; ``random`` from the file's ``random`` rows, else derived (the answer the
model gave for another clip with the same prompt, :func:`musiceval.conditions.random_recorded_responses`,
averaged over ``random_draws`` draws); ``skyline`` / ``adversarial`` from ``rewrites``; ``noise``,
``text_only``, ``silence`` as recorded.

The question control (:meth:`FreeformProtocol.question_permutation`): each Correct answer moved to
another question about the same clip (MusicQA asks about nine per track) and scored against THIS
item's references with the same metric; answers that describe the clip whatever the question
score the same in place as moved.

Options: ``metrics`` (names; default all registered), ``rewrites`` (path or None),
``random_draws`` (1), ``sentence_encoder`` ("minilm"), ``bertscore_model`` ("minilm"),
``bertscore_layers`` (6), ``bertscore_baseline`` (None), ``clap`` (None), ``cache_dir`` (None),
``embedding_cache`` (an EmbeddingCache object shared by workers; wins over cache_dir),
``data_dir`` (root of the items' audio for clap_audio; default the answer file's folder),
``keep_compared_only`` (False: keep only items with a same-prompt Random partner or a rewrite).
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
from collections import Counter, OrderedDict
from pathlib import Path
from typing import Any, Iterator

from musiceval.data.answers import AnswerSet
from musiceval.keys import Key
from musiceval.protocols.freeform.score import FLAGS, score_freeform
from musiceval.protocols.scoring import ScoreReport, ScoreRequest
from musiceval.ranges import AT_LEAST_ONE, NON_NEGATIVE_INT, SHARE
from musiceval.exclusions import NO_RANDOM_ROW, NO_SAME_PROMPT_PARTNER, Exclusion, exclude
from musiceval.protocols.pairing import conditions as conditions_of, model_name, orphans
from musiceval.protocols.base import (PARSE_RATE, QUESTION_PERMUTATION, MetricInfo, Protocol, ProtocolSettings,
                                      register_protocol, with_exclusions)
from musiceval.records import ItemFailure, ItemScores
from musiceval.stats.scales import BINARY


def _without_random(evaluation, recorded: bool) -> list[Exclusion]:
    """Items answered under Correct that have no Random answer (no same-prompt partner for a derived
    Random, no ``random`` row in a file that ``recorded`` them): out of Correct vs Random, by rule,
    not failures."""
    if "correct" not in evaluation.texts:
        return []
    answered = [i for draw in evaluation.texts["correct"] for i in draw if i in evaluation.items]
    paired = {i for draw in evaluation.texts.get("random", []) for i in draw}
    return exclude("no_random_partner", [i for i in answered if i not in paired], conditions=("random",),
                   detail=NO_RANDOM_ROW if recorded else NO_SAME_PROMPT_PARTNER)


@register_protocol
class FreeformProtocol(Protocol):
    name = "freeform"
    headline = "sentence_cosine"
    answer_file = "a free-form answer file (answers with references)"
    config_keys = {
        "min_parse_rate": Key((int, float), 0.9, "share of non-empty answers", SHARE),
        "random_draws": FLAGS["random_draws"],
        "sentence_encoder": Key(str, "minilm", "encoder of sentence_cosine"),
        "bertscore_model": Key(str, "minilm", "BERTScore model"),
        "bertscore_layers": Key(int, 6, "BERTScore layer", NON_NEGATIVE_INT),
        "clap": Key(str, "", "CLAP hub id, directory or LAION .pt (default $MUSICEVAL_CLAP or laion/larger_clap_music)"),
        "metrics": Key(list, [], "metrics scored (default: every registered free-form metric)"),
        "live_questions": Key(str, "freeform.jsonl", "live questions, relative to the synthesised audio shipped with musiceval"),
        "live_max_tokens": Key(int, 128, "live answer length for a real model", AT_LEAST_ONE),
    }
    options_from_config = ("random_draws", "sentence_encoder", "bertscore_model", "bertscore_layers", "clap", "metrics")
    answer_options = {
        "rewrites": Key(str, "", "Skyline/Adversarial rewrites file (relative to the config)"),
        "random_draws": config_keys["random_draws"],
        "data_dir": Key(str, "", "root of the items' audio for clap_audio (relative to the config)"),
        "metrics": config_keys["metrics"],
        "keep_compared_only": Key(bool, False, "score only the items some gate compares"),
    }
    #: ``musiceval score freeform`` (:mod:`musiceval.protocols.freeform.score`)
    score_flags = FLAGS
    score_help = "free-form QA: BLEU, METEOR, ROUGE-L, CIDEr-D, BERTScore, CLAPText, CLAPAudio, sentence cosine per condition"

    @classmethod
    def score(cls, request: ScoreRequest) -> ScoreReport:
        return score_freeform(cls, request)

    @classmethod
    def component_versions(cls) -> dict[str, str]:
        """The lexical metrics' version, the rewrite prompt's, and every registered metric's own
        (a plugin metric's ``version``): a changed metric is a changed scorer."""
        from musiceval.llm.rewrite import PROMPT_VERSION
        from musiceval.metrics.lexical import METRICS_VERSION
        from musiceval.metrics.registry import METRICS

        out = {"freeform_metrics": str(METRICS_VERSION), "rewrite_prompt": str(PROMPT_VERSION)}
        out.update({f"metric:{name}": spec.version for name, spec in METRICS.items()
                    if spec.protocol == "freeform" and spec.version})
        return out

    def __init__(self, evaluation, *, metrics: tuple[str, ...] | None = None, model: str = "model", source: str = "",
                 excluded: tuple[Exclusion, ...] = ()):
        #: the wrapped :class:`musiceval.protocols.freeform.engine.FreeformEvaluation`
        self.evaluation = evaluation
        self._excluded = tuple(excluded)
        self._metrics = tuple(metrics) if metrics else None
        if self._metrics and "sentence_cosine" not in self._metrics:  # the first gating metric asked for leads
            gating = [m for m in self._metrics if self.metric_info(m).role == "gate"]
            self.headline = (gating or self._metrics)[0]  # only findings asked for: refused by check_headline
        self.model = model
        self.source = source
        self.seed = int(getattr(evaluation, "seed", 0))
        self.derived = tuple(c for c in evaluation.derived if c in self.conditions)

    @classmethod
    def from_answers(cls, answers: AnswerSet, settings: ProtocolSettings | None = None) -> "FreeformProtocol":
        from musiceval.conditions import load_rewrites
        from musiceval.metrics.embedding_models import Models
        from musiceval.protocols.freeform.engine import FreeformEvaluation

        settings = settings or ProtocolSettings()
        opts = settings.options
        rewrites = opts.get("rewrites")
        if isinstance(rewrites, (str, Path)):
            rewrites = load_rewrites(rewrites)
        recorded_random, model = "random" in conditions_of(answers), model_name(answers)
        data = dataclasses.replace(answers, failures=list(answers.failures) + orphans(answers))
        not_compared: list[str] = []
        if opts.get("keep_compared_only"):
            prompt_count = Counter(r.prompt for r in data.responses if r.condition == "correct")
            keep = {r.item_id for r in data.responses if r.condition == "correct" and prompt_count[r.prompt] > 1}
            keep |= set(rewrites or ())
            not_compared = [it.id for it in data.items if it.id not in keep]
            data = dataclasses.replace(data, items=[it for it in data.items if it.id in keep],
                                       responses=[r for r in data.responses if r.item_id in keep])
        models = Models(sentence_encoder=opts.get("sentence_encoder", "minilm"), clap=opts.get("clap"),
                        bertscore_model=opts.get("bertscore_model", "minilm"),
                        bertscore_layers=int(opts.get("bertscore_layers", 6)),
                        bertscore_baseline=opts.get("bertscore_baseline"), cache_dir=opts.get("cache_dir"),
                        embedding_cache=opts.get("embedding_cache"))
        data_dir = opts.get("data_dir") or (Path(answers.source).parent if answers.source else None)
        evaluation = FreeformEvaluation(data, seed=settings.seed, random_draws=int(opts.get("random_draws", 1)),
                                        rewrites=rewrites, models=models, data_dir=data_dir)
        metrics = opts.get("metrics")
        if isinstance(metrics, str):
            metrics = [m.strip() for m in metrics.split(",") if m.strip()]
        if metrics:
            from musiceval.metrics.registry import metric_names

            unknown = [m for m in metrics if m not in metric_names("freeform")]
            if unknown:
                raise KeyError(f"freeform: unknown metric(s) {unknown}; registered: {', '.join(metric_names('freeform'))}")
        excluded = (*answers.excluded, *exclude("not_compared", not_compared), *_without_random(evaluation, recorded_random))
        return cls(evaluation, metrics=tuple(metrics) if metrics else None, model=model, source=answers.source,
                   excluded=excluded)

    # ------------------------------------------------------------------ interface

    @property
    def conditions(self) -> tuple[str, ...]:
        return tuple(c for c in self.evaluation.conditions() if any(d for d in self.evaluation.texts[c]))

    @property
    def metrics(self) -> tuple[str, ...]:
        from musiceval.metrics.registry import metric_names

        names = list(self._metrics or metric_names("freeform"))
        head = self.headline if self.headline in names else None
        return tuple(([head] if head else []) + [m for m in names if m != head] + [PARSE_RATE])

    @property
    def failures(self) -> list[ItemFailure]:
        return list(self.evaluation.failures)

    def exclusions(self) -> tuple[Exclusion, ...]:
        return self._excluded

    def metric_info(self, metric: str) -> MetricInfo:
        if metric == PARSE_RATE:
            return MetricInfo(PARSE_RATE, True, "share of non-empty answers (0-1)", scale=BINARY)
        from musiceval.metrics.registry import get_metric

        spec = get_metric(metric)
        return MetricInfo(metric, spec.higher_is_better, spec.unit, spec.description, spec.role, scale=spec.scale)

    def scores(self, metric: str, condition: str = "correct") -> ItemScores:
        self.check(metric, condition)
        if metric == PARSE_RATE:
            from musiceval.metrics.lexical import as_text

            draws = self.evaluation.texts[condition]
            values, failures = {}, []
            for draw in draws:
                for i, text in draw.items():
                    if i not in self.evaluation.items:
                        continue
                    try:
                        ok = bool(as_text(text, "candidate").strip())
                    except ValueError:
                        ok = False
                    values.setdefault(i, []).append(float(ok))
            ids = tuple(values)
            vals = [sum(v) / len(v) for v in values.values()]
            groups = tuple(self.evaluation.items[i].group or i for i in ids)
            return ItemScores(PARSE_RATE, ids, vals, groups=groups, condition=condition, failures=tuple(failures))
        self._bertscore_first(metric, condition)
        s = self.evaluation.scores(metric, condition)
        return ItemScores(metric, s.ids, s.values, groups=s.groups, condition=condition, failures=s.failures)

    def _bertscore_first(self, metric: str, condition: str) -> None:
        """Score BERTScore under ``condition`` before sentence cosine when this run scores both on the
        bundled MiniLM (:attr:`~musiceval.metrics.embedding_models.Models.pools_sentence_vectors`),
        as ``musiceval score freeform`` orders them: BERTScore's forward pass also stores sentence
        cosine's vectors, so each text goes through MiniLM once, and sentence cosine reads the same
        vectors on a cold run as on a warm one. A BERTScore that cannot run (its model or package
        absent: :meth:`evaluate` names why) leaves sentence cosine to its own encoder."""
        if (metric != "sentence_cosine" or "bertscore" not in self.metrics
                or not self.evaluation.models.pools_sentence_vectors):
            return
        with contextlib.suppress(FileNotFoundError, ImportError):
            self.evaluation.scores("bertscore", condition)

    def question_items(self) -> tuple[tuple[str, str, str], ...]:
        """Every item answered under Correct: its id, its clip (group, else audio) and its question."""
        answered = self.evaluation.texts.get("correct", [{}])[0]
        return tuple((i, str(it.group or it.audio or i), it.question) for i, it in sorted(self.evaluation.items.items())
                     if i in answered)

    def question_permutation(self, metric: str) -> ItemScores | None:
        """``metric`` of the answer the model gave to another question about the same clip, scored
        against THIS item's references (None for parse_rate and for a reference-free metric such
        as clap_audio, which scores an answer against the clip, the same for every question)."""
        if metric == PARSE_RATE or metric not in self.metrics:
            return None
        from musiceval.metrics.registry import get_metric

        if get_metric(metric).reference_free:
            return None
        partners = self.question_partners()
        if not partners.enough:
            return None
        answered = self.evaluation.texts["correct"][0]
        moved = {i: answered[p] for i, p in partners.partner.items()}
        s = self.evaluation.score_texts(metric, QUESTION_PERMUTATION, moved)
        return ItemScores(metric, s.ids, s.values, groups=s.groups, condition=QUESTION_PERMUTATION, failures=s.failures)

    def evaluate(self) -> dict[str, Any]:
        """Means on Correct (headline first), ``n``, ``n_failed``, ``failures``; a metric whose model
        or audio cannot be loaded is absent and named with the reason under ``unavailable``."""
        out: dict[str, Any] = OrderedDict()
        failed = {f.item_id: f.reason for f in self.failures}
        unavailable: dict[str, str] = {}
        n = 0
        for metric in self.metrics:
            try:
                s = self.scores(metric, "correct")
            except (FileNotFoundError, ImportError, ValueError) as exc:
                unavailable[metric] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                continue
            out[metric] = s.mean() if s.n else math.nan
            n = max(n, s.n)
            for f in s.failures:
                failed.setdefault(f.item_id, f.reason)
        out["n"], out["n_failed"] = n, len(failed)
        out["failures"] = [{"item_id": i, "reason": r} for i, r in failed.items()]
        if unavailable:
            out["unavailable"] = unavailable
        return with_exclusions(out, self.exclusions())

    def samples(self) -> Iterator[dict[str, Any]]:
        from musiceval.data.musicqa import item_references

        cache: dict[tuple[str, str], dict[str, float]] = {}
        for condition in self.conditions:
            per_metric = {}
            for metric in self.metrics:
                try:
                    s = self.scores(metric, condition)
                except (FileNotFoundError, ImportError, ValueError):
                    continue  # a model-based metric whose model is unavailable: left out of the samples
                per_metric[metric] = dict(zip(s.ids, s.values.tolist()))
            draw = self.evaluation.texts[condition][0]
            for i, text in draw.items():
                item = self.evaluation.items.get(i)
                if item is None:
                    continue
                cache[(i, condition)] = {m: v[i] for m, v in per_metric.items() if i in v}
                yield {"item_id": i, "condition": condition, "prompt": item.question, "answer": text,
                       "parsed": text, "reference": list(item_references(item)), "scores": cache[(i, condition)]}
