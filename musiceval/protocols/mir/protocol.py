"""CMI-Bench MIR tasks as a :class:`~musiceval.protocols.base.Protocol`.

Wraps :func:`musiceval.protocols.mir.metrics.tasks.score_task`. Metrics are the task's per-item
metrics (headline first: ``accuracy``, ``weighted_score``, ``r2``, ``f_measure``, ``wer``,
``item_roc_auc``, ``item_f1``, ``overall_accuracy`` or a captioning score) and ``parse_rate``
(the response parsed; an unparsed response is scored by the task's rule, 0 or the mean for
regression, and listed in the failures as ``unparsed: ...`` or ``imputed: ...``).
:meth:`MirProtocol.evaluate` also carries the task's file-level metrics (macro ROC-AUC, macro F1 ...).

Conditions: ``correct``; ``random`` from recorded ``random`` responses, else derived: the response
the model gave for another clip with the same prompt (:func:`musiceval.conditions.random_recorded_responses`),
scored by the same task rules against this item's own reference; other controls as recorded.
Chances: the trivial baseline per item (majority class, majority key, mean predictor, metronome
at the median tempo, empty transcript, majority technique); for classification and pitch also a
uniform guess among the task's classes; for tagging's per-item ROC-AUC the fixed 0.5, the
tag-frequency ranking (an oracle prior: the tags ranked by how many references hold them, the same
ranking for every item), the file's most common response sent for every item and the answer
permutation (the file's own answers moved to other clips), each paired by item. The release gate
compares the model with all of them at once (:func:`musiceval.protocols.checks.beats_chance`).

Options: ``compat`` (None, ``"cmi-bench"`` or ``"cmi-bench@<commit>"``, see
:mod:`musiceval.protocols.mir.metrics.compat`), ``encoder`` ("minilm"; tagging), ``threads`` (torch
threads of that encoder and of captioning BERTScore), ``cache_dir``,
``bertscore_model`` / ``bertscore_layers`` (captioning; ``"none"`` skips BERTScore),
``max_items`` (score the first N records), ``task`` (when the AnswerSet does not name it),
``embed`` (a texts -> rows callable used instead of ``encoder``), ``bertscorer`` (a BERTScorer
used instead of loading one). Beat tasks keep their metronome baseline under ``cache_dir``
(:class:`musiceval.protocols.mir.engine.BaselineStore`), and every condition reuses it (it depends on the
references only).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterator

from musiceval.data.answers import AnswerSet
from musiceval.keys import Key
from musiceval.protocols.mir.score import FLAGS, score_mir
from musiceval.protocols.scoring import ScoreReport, ScoreRequest
from musiceval.ranges import AT_LEAST_ONE, NON_NEGATIVE_INT, SHARE
from musiceval.exclusions import NO_RANDOM_ROW, NO_SAME_PROMPT_PARTNER, Exclusion, exclude
from musiceval.protocols.pairing import conditions as conditions_of, model_name, orphans, pairs
from musiceval.protocols.base import (CONTROL_CONDITIONS, PARSE_RATE, Chance, MetricInfo, Protocol, ProtocolSettings,
                                     register_protocol, with_exclusions)
from musiceval.records import ItemFailure, ItemScores
from musiceval.stats.scales import BINARY, NON_NEGATIVE, SECONDS, UNBOUNDED, UNIT, Scale
from musiceval.protocols.mir.metrics.compat import COMPAT_MODES
from musiceval.schemas import OutputRecord

HEADLINES = {"classification": "accuracy", "pitch": "accuracy", "key": "weighted_score", "regression": "r2",
             "beats": "f_measure", "lyrics": "wer", "tagging": "item_roc_auc", "guzheng": "item_f1",
             "melody": "overall_accuracy", "andalusian": "accuracy", "yes_no": "accuracy", "label_set": "item_f1",
             "structure": "boundary_f1_3s"}
BASELINES = {"classification": "majority-class baseline", "pitch": "majority-class baseline",
             "key": "majority-key baseline", "regression": "mean predictor", "beats": "metronome at the median tempo",
             "lyrics": "empty transcript", "guzheng": "majority-technique baseline",
             "andalusian": "majority-class baseline", "yes_no": "majority-class baseline",
             "label_set": "most common label set", "structure": "one section, no boundary"}
LOWER_IS_BETTER = ("wer", "cer", "deviation_ref_to_est", "deviation_est_to_ref")
UNITS = {"accuracy": "accuracy (0-1)", "weighted_score": "MIREX weighted key score (0-1)", "r2": "R^2 contribution",
         "f_measure": "beat F-measure (0-1)", "cmlt": "CMLt (0-1)", "amlt": "AMLt (0-1)",
         "wer": "WER (fraction of reference words)", "cer": "CER (fraction of reference characters)",
         "item_roc_auc": "per-item ROC-AUC (0-1)", "item_f1": "per-item frame F1 (0-1)",
         "overall_accuracy": "melody overall accuracy (0-1)", "micro_f1": "micro F1 (0-1)", "macro_f1": "macro F1 (0-1)",
         "exact_match": "exact label-set match (0-1)", "boundary_f1_05s": "boundary F1 within 0.5 s (0-1)",
         "boundary_f1_3s": "boundary F1 within 3 s (0-1)", "pairwise_f1": "pairwise label F1 (0-1)",
         "rand_index": "Rand index (0-1)", "ari": "adjusted Rand index", "deviation_ref_to_est":
         "median reference-to-estimate boundary deviation (s)", "deviation_est_to_ref":
         "median estimate-to-reference boundary deviation (s)"}
#: (family, metric) -> its unit where one metric name means another thing in that family
FAMILY_UNITS = {("label_set", "item_f1"): "per-item label-set F1 (0-1)"}
#: what one item's value is (musiceval.stats.scales): 0/1 outcomes, a number in a known range, or
#: seconds; the gates' intervals follow it, never the values (docs/regression-gates.md, "Binary or
#: continuous: the metric declares it")
SCALES = {"accuracy": BINARY, "exact_match": BINARY,
          **{m: UNIT for m in ("weighted_score", "f_measure", "cmlt", "amlt", "item_roc_auc", "item_f1",
                               "overall_accuracy", "micro_f1", "macro_f1", "boundary_f1_05s", "boundary_f1_3s",
                               "pairwise_f1", "rand_index", "bleu", "bleu4", "meteor", "rouge_l")},
          # BERTScore: cosines' F1, at most 1 (below 0 when rescaled with a baseline)
          **{m: Scale(high=1.0) for m in ("bertscore_precision", "bertscore_recall", "bertscore_f1")},
          # WER and CER exceed 1 with insertions
          "wer": NON_NEGATIVE, "cer": NON_NEGATIVE, "deviation_ref_to_est": SECONDS, "deviation_est_to_ref": SECONDS,
          # R^2's per-item contribution and the adjusted Rand index have no range a gate may assume
          "r2": UNBOUNDED, "ari": Scale(high=1.0)}


def records_by_condition(answers: AnswerSet) -> dict[str, list[OutputRecord]]:
    """The answer set's records by condition (``correct`` first, then in file order), in one pass."""
    out: dict[str, list[OutputRecord]] = {c: [] for c in ("correct", *conditions_of(answers))}
    for k, (item, r) in enumerate(pairs(answers)):
        meta = item.meta or {}
        out[r.condition].append(OutputRecord(
            item_id=item.id, index=int(meta.get("index", k)), question=item.question or r.prompt, response=r.text,
            correct_answer=item.reference if item.reference is not None else ",".join(item.labels),
            audioid=str(meta.get("audioid", "")), group=item.group or item.id, other=meta.get("other", "")))
    return out


@register_protocol
class MirProtocol(Protocol):
    name = "mir"
    headline = "accuracy"
    answer_file = "a CMI-Bench output file"
    config_keys = {
        "min_parse_rate": Key((int, float), 0.5, "share of responses the task's parser reads", SHARE),
        "compat": Key(str, "", "'' (corrected rules), cmi-bench (the toolkit's rules, quirks included) or "
                               "cmi-bench@35235cb / cmi-bench@2cafca5 (evaluate.py at that commit)",
                      choices=("", *(m for m in COMPAT_MODES if m))),
        "encoder": Key(str, "minilm", "text encoder of the tagging tasks"),
        "tagging_items": Key(int, 0, "score only the first N records of tagging files (0 = all; a cap is printed in "
                                     "the verdict)", NON_NEGATIVE_INT),
        "captioning_items": Key(int, 0, "score only the first N records of captioning files (0 = all; a cap is "
                                        "printed in the verdict)", NON_NEGATIVE_INT),
        "bertscore_model": Key(str, "minilm", "captioning BERTScore model"),
        "bertscore_layers": Key(int, 6, "captioning BERTScore layer", NON_NEGATIVE_INT),
        "live_max_tokens": Key(int, 128, "live answer length for a real model", AT_LEAST_ONE),
        "live_dataset_tasks": Key(list, ["GTZAN", "GS_key", "Nsynth_instrument", "Nsynth_pitch", "gtzan_beat"],
                                  "live tasks on a downloaded CMI-Bench"),
        "live_dataset_items": Key(int, 20, "live instructions per task on a downloaded CMI-Bench", AT_LEAST_ONE),
    }
    options_from_config = ("compat", "encoder", "bertscore_model", "bertscore_layers")
    answer_options = {"compat": config_keys["compat"], "encoder": config_keys["encoder"],
                      "tagging_items": config_keys["tagging_items"], "captioning_items": config_keys["captioning_items"]}
    #: ``musiceval score mir`` (:mod:`musiceval.protocols.mir.score`)
    score_flags = FLAGS
    score_help = "CMI-Bench MIR tasks (accuracy, key, beats, R^2, WER/CER, tagging AUC, melody, Guzheng F1, captioning)"

    @classmethod
    def score(cls, request: ScoreRequest) -> ScoreReport:
        return score_mir(cls, request)

    @classmethod
    def task_of(cls, path) -> str:
        from musiceval.data.cmibench import task_from_filename

        return task_from_filename(path)[1]

    @classmethod
    def label_of(cls, path) -> str:
        from musiceval.data.cmibench import parse_filename

        return parse_filename(path).label

    @classmethod
    def options_from(cls, section, entry, task: str = "") -> dict[str, Any]:
        """Besides the base options, ``max_items``: the cap of the task's family (``tagging_items``,
        ``captioning_items``; the answers entry's wins over the section's; ``None`` = every record)."""
        from musiceval.protocols.mir.metrics.tasks import FAMILIES

        caps = ("tagging_items", "captioning_items")
        key = f"{FAMILIES.get(task, '')}_items"
        limit = entry.get(key, section.get(key, 0)) if key in caps else 0
        options = super().options_from(section, {k: v for k, v in entry.items() if k not in caps}, task)
        options["max_items"] = int(limit or 0) or None
        return options

    @classmethod
    def component_versions(cls) -> dict[str, str]:
        from musiceval.protocols.mir.metrics.tasks import PARSER_VERSION

        return {"mir_parsers": str(PARSER_VERSION)}

    def __init__(self, task: str, records: dict[str, list[OutputRecord]], *, compat: str | None = None, embed=None,
                 bertscorer=None, bert_info: dict | None = None, failures=(), model: str = "model", source: str = "",
                 query_prefix: str = "", baseline_memo=None, derived: tuple[str, ...] = (),
                 excluded: tuple[Exclusion, ...] = (), lexical_cache=None):
        from musiceval.protocols.mir.metrics.tasks import FAMILIES

        self.task = task
        self.family = FAMILIES[task]
        #: condition -> the records scored under it (random: the deranged responses)
        self.records = records
        self.compat = compat
        self._embed = embed
        self._bertscorer = bertscorer
        self.bert_info = bert_info
        self._failures = list(failures)
        self._excluded = tuple(excluded)
        self.model = model
        self.source = source
        self._query_prefix = query_prefix
        self._baseline_memo = baseline_memo
        self._lexical_cache = lexical_cache
        self.derived = tuple(derived)
        self._results: dict[str, Any] = {}
        correct = self.result("correct")
        if self.family == "captioning":
            keys = [k for k in ("bertscore_f1", "bertscore_recall", "meteor") if k in correct.per_item]
            self.headline = keys[0] if keys else next(iter(correct.per_item))
        else:
            self.headline = HEADLINES[self.family]

    @classmethod
    def from_answers(cls, answers: AnswerSet, settings: ProtocolSettings | None = None) -> "MirProtocol":
        from musiceval.conditions import random_recorded_responses
        from musiceval.protocols.mir.metrics.tasks import FAMILIES

        settings = settings or ProtocolSettings()
        opts = settings.options
        task = opts.get("task") or answers.extra.get("task")
        if task not in FAMILIES:
            raise ValueError(f"{answers.source or 'answers'}: unknown or missing CMI-Bench task {task!r}; name the file "
                             f"<model>_<task>.jsonl or set the mir option 'task' (one of {', '.join(FAMILIES)})")
        compat = opts.get("compat")
        from musiceval.protocols.mir.metrics.compat import check_compat

        try:
            check_compat(compat)
        except ValueError as exc:  # before any encoder loads
            raise ValueError(f"{answers.source or 'answers'}: mir option 'compat': {exc}") from None
        failures, model = list(answers.failures) + orphans(answers), model_name(answers)
        records = records_by_condition(answers)
        correct, beyond, max_items = records["correct"], [], opts.get("max_items")
        if max_items is not None:
            correct, beyond = correct[: int(max_items)], correct[int(max_items):]
        keep = {r.item_id for r in correct}
        records = {c: correct if c == "correct" else [r for r in rs if r.item_id in keep] for c, rs in records.items()}
        recorded_random = "random" in records
        if not recorded_random and len(correct) >= 2:
            rr = random_recorded_responses([r.item_id for r in correct], [r.question for r in correct],
                                           [r.response for r in correct], settings.seed, clips=[r.group for r in correct])
            partner = rr.draws[0]
            derived = [OutputRecord(r.item_id, r.index, r.question, partner[r.item_id], r.correct_answer, r.audioid,
                                    r.group, r.other) for r in correct if r.item_id in partner]
            if derived:
                records["random"] = derived
        derived_conditions = ("random",) if "random" in records and not recorded_random else ()
        paired = {r.item_id for r in records.get("random", ())}
        excluded = [*answers.excluded,
                    *(exclude("beyond_max_items", [r.item_id for r in beyond],
                              detail=f"first {int(max_items)} of {len(correct) + len(beyond)} records")
                      if max_items is not None else ()),
                    *exclude("no_random_partner", [r.item_id for r in correct if r.item_id not in paired],
                             conditions=("random",), detail=NO_RANDOM_ROW if recorded_random else NO_SAME_PROMPT_PARTNER)]
        family = FAMILIES[task]
        embed = opts.get("embed")
        if family == "tagging" and embed is None:
            from musiceval.protocols.mir.engine import default_cache_dir, make_embedder

            embed = make_embedder(str(opts.get("encoder", "minilm")), opts.get("cache_dir") or default_cache_dir(),
                                  threads=opts.get("threads"))
        bertscorer, bert_info = opts.get("bertscorer"), None
        if family == "captioning" and bertscorer is None and opts.get("bertscore_model") != "none":
            from musiceval.protocols.mir.engine import bertscore_choice, shared_bertscorer

            bert_model, layers = bertscore_choice(opts.get("bertscore_model"), opts.get("bertscore_layers"), compat)
            bertscorer, reason = shared_bertscorer(bert_model, layers, opts.get("cache_dir"), threads=opts.get("threads"))
            bert_info = {"model": bert_model, "layers": layers, "rescaled": False, "error": reason}
        query_prefix = ""
        if family == "tagging":
            from musiceval.protocols.mir.engine import query_prefix_for

            query_prefix = query_prefix_for(str(opts.get("encoder", "minilm")), compat)
        memo = None
        if family == "beats" and opts.get("cache_dir"):
            from musiceval.protocols.mir.engine import BaselineStore

            memo = BaselineStore(opts["cache_dir"])
        lexical = None
        if family == "captioning" and opts.get("cache_dir"):  # the lexical scores, beside the embeddings
            from musiceval.metrics.lexical_cache import LexicalScoreCache

            lexical = LexicalScoreCache(opts["cache_dir"])
        return cls(task, records, compat=compat, embed=embed, bertscorer=bertscorer, bert_info=bert_info,
                   failures=failures, model=model, source=answers.source,
                   query_prefix=query_prefix, baseline_memo=memo, derived=derived_conditions, excluded=tuple(excluded),
                   lexical_cache=lexical)

    def result(self, condition: str = "correct"):
        """The :class:`~musiceval.protocols.mir.metrics.tasks.TaskResult` of ``condition`` (scored once)."""
        from musiceval.protocols.mir.metrics.tasks import score_task

        if condition not in self._results:
            self._results[condition] = score_task(self.task, self.records[condition], compat=self.compat, embed=self._embed,
                                                  query_prefix=self._query_prefix, bertscorer=self._bertscorer,
                                                  baseline_memo=self._baseline_memo, lexical_cache=self._lexical_cache)
        return self._results[condition]

    # ------------------------------------------------------------------ interface

    @property
    def conditions(self) -> tuple[str, ...]:
        return tuple(["correct"] + [c for c in CONTROL_CONDITIONS if c in self.records]
                     + [c for c in self.records if c != "correct" and c not in CONTROL_CONDITIONS])

    @property
    def metrics(self) -> tuple[str, ...]:
        per = list(self.result("correct").per_item)
        return tuple([self.headline] + [m for m in per if m != self.headline] + [PARSE_RATE])

    @property
    def failures(self) -> list[ItemFailure]:
        return list(self._failures)

    def exclusions(self) -> tuple[Exclusion, ...]:
        return self._excluded

    def metric_info(self, metric: str) -> MetricInfo:
        if metric == PARSE_RATE:
            return MetricInfo(PARSE_RATE, True, "share of responses the task's parser read (0-1)", scale=BINARY)
        unit = FAMILY_UNITS.get((self.family, metric), UNITS.get(metric, ""))
        return MetricInfo(metric, metric not in LOWER_IS_BETTER, unit, f"{self.task} ({self.family})", scale=SCALES.get(metric))

    def _unparsed(self, condition: str) -> dict[str, str]:
        """item id -> reason of every response scored by the task's rule although it did not parse."""
        out = {}
        for f in self.result(condition).failures:
            if f.reason.startswith("reference"):
                continue
            prefix = "imputed: scored as the mean predictor" if self.family == "regression" else "unparsed: scored by the task's rule"
            out.setdefault(f.item_id, f"{prefix} ({condition}): {f.reason}")
        return out

    def scores(self, metric: str, condition: str = "correct") -> ItemScores:
        self.check(metric, condition)
        res = self.result(condition)
        unparsed = self._unparsed(condition)
        if metric == PARSE_RATE:
            recs = self.records[condition]
            return ItemScores(PARSE_RATE, [r.item_id for r in recs], [float(r.item_id not in unparsed) for r in recs],
                              groups=[r.group for r in recs], condition=condition)
        if metric not in res.per_item:
            raise KeyError(f"mir {self.task}: metric {metric!r} not scored under {condition!r} (have {', '.join(res.per_item)})")
        s = res.per_item[metric]
        scored = set(s.ids)
        failures = [ItemFailure(i, unparsed[i]) for i in s.ids if i in unparsed]
        failures += [f for f in res.failures if f.item_id not in scored or f.reason.startswith("reference")]
        if condition == "correct":
            failures = list(self._failures) + failures
        return ItemScores(metric, s.ids, s.values, groups=s.groups, condition=condition, failures=tuple(failures))

    def chances(self, metric: str) -> tuple[Chance, ...]:
        from musiceval.vocab.cmibench import CLASS_VOCABULARIES

        res = self.result("correct")
        out = []
        if metric in res.baseline and res.baseline[metric].n:
            b = res.baseline[metric]
            base = ItemScores(metric, b.ids, b.values, groups=b.groups, condition="baseline")
            out.append(Chance("baseline", base.mean(), name=BASELINES.get(self.family, "trivial baseline"),
                              description=f"{self.task}: the trivial predictor scored per item", scores=base))
        if metric == "accuracy" and self.family in ("classification", "pitch") and CLASS_VOCABULARIES.get(self.task):
            k = len(CLASS_VOCABULARIES[self.task])
            out.append(Chance("fixed", 1.0 / k, name=f"uniform chance 1/{k}",
                              description=f"a uniform guess among the {k} classes of {self.task}"))
        if metric == "item_roc_auc":
            out.append(Chance("fixed", 0.5, name="chance AUC 0.5", description="a random ranking of the tags"))
        out.extend(self._blind_rankings(metric))
        return tuple(out)

    def _blind_rankings(self, metric: str) -> list[Chance]:
        """A ranking metric's answer-blind rankings (tagging: the tag-frequency ranking, an oracle
        prior, and the file's most common response, both sent for every item;
        :func:`musiceval.protocols.mir.metrics.tasks.blind_rankings`) and the file's own answers moved to other
        items (:meth:`answer_permutation`), each paired by item."""
        out = [Chance("baseline", s.scores.mean(), name=s.name, description=s.description,
                      scores=ItemScores(metric, s.scores.ids, s.scores.values, groups=s.scores.groups, condition=s.name))
               for s in self.result("correct").answer_blind.get(metric, ()) if s.scores.n]
        permuted = self.answer_permutation(metric) if out else None
        if permuted is not None and permuted.n:
            out.append(Chance("baseline", permuted.mean(), name="answer permutation", scores=permuted,
                              description="the file's own answers moved to other clips (another clip's answer to the "
                                          "same prompt), scored against each item"))
        return out

    def evaluate(self) -> dict[str, Any]:
        base = super().evaluate()
        out: dict[str, Any] = OrderedDict((k, v) for k, v in base.items() if k not in ("n", "n_failed", "failures", "excluded"))
        for k, v in self.result("correct").metrics.items():
            out.setdefault(k, v)
        out["n"], out["n_failed"], out["failures"] = base["n"], base["n_failed"], base["failures"]
        return with_exclusions(out, self.exclusions())

    def samples(self) -> Iterator[dict[str, Any]]:
        for condition in self.conditions:
            res = self.result(condition)
            unparsed = self._unparsed(condition)
            values = {m: dict(zip(s.ids, s.values.tolist())) for m, s in res.per_item.items()}
            for r in self.records[condition]:
                scores = {m: v[r.item_id] for m, v in values.items() if r.item_id in v}
                scores[PARSE_RATE] = float(r.item_id not in unparsed)
                yield {"item_id": r.item_id, "condition": condition, "prompt": r.question, "answer": r.response,
                       "parsed": r.item_id not in unparsed, "reference": r.correct_answer, "scores": scores}
