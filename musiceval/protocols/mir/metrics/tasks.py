"""CMI-Bench MIR tasks scored from model responses: one parser and one metric family per task.

Modes (``compat``):

- ``None`` (default): the corrected rules of :mod:`musiceval.parsers` and the metric modules.
- ``"cmi-bench"``: the CMI-Bench toolkit's ``evaluate.py`` rules, quirks included, so the published
  numbers reproduce from raw outputs. Every difference is listed in docs/cmi-bench.md.
- ``"cmi-bench@35235cb"``, ``"cmi-bench@2cafca5"``: ``evaluate.py`` at one toolkit commit as a whole
  (:mod:`musiceval.protocols.mir.metrics.compat` says which rule each mode takes from which commit).

Task families and metric keys:

============================  ==========================================  ========================
family                        tasks                                        metrics
============================  ==========================================  ========================
classification                GTZAN, Nsynth_instrument, VocalSet_tech,     accuracy
                              Nsynth_pitch
key                           GS_key                                       weighted_score
regression                    EMO_arousal, EMO_valence                     r2
beats                         gtzan_/ballroom_ beat / downbeat             f_measure, cmlt, amlt
lyrics                        DSing                                        wer, cer
tagging                       MTT, MTG_genre/emotion/instrument/top50tags  roc_auc, pr_auc
guzheng                       Guzheng_Tech                                 macro_f1, micro_f1
melody                        MedleyDB                                     overall_accuracy
captioning                    MusicCaps, SDD                               free-form names,
                                                                           bertscore_*
andalusian                    ArabAndalusian_nawba/tab/form/mizan          accuracy
yes_no                        Lyra_dance                                   accuracy
label_set                     Lyra_instrument/genre/place                  micro_f1, macro_f1,
                                                                           exact_match, item_f1
structure                     SongFormBench                                boundary_f1_05s/_3s,
                                                                           pairwise_f1, rand_index,
                                                                           ari, deviation_*
============================  ==========================================  ========================

The last four families are the tasks of the toolkit's development branch (commit 35235cb), scored
by :mod:`musiceval.protocols.mir.metrics.development_branch`.

:func:`score_task` is pure apart from the ``embed`` callable that tagging needs (a function from
texts to L2-normalised rows), the ``bertscorer`` captioning uses and the captioning backends it
imports.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from musiceval.vocab.cmibench import CLASS_VOCABULARIES, TAG_VOCABULARIES
from musiceval.schemas import OutputRecord
from musiceval.protocols.mir.metrics import families as fam
from musiceval.protocols.mir.metrics.compat import check_compat, is_old
from musiceval.protocols.mir.metrics.tagging import per_item_auc
from musiceval.protocols.mir.metrics.task_result import BlindStrategy, TaskResult, item_scores as _scores

#: bump when a MIR parser or compat rule changes: runs scored differently do not compare (provenance)
PARSER_VERSION = "mir-parsers-2"
FAMILIES = {
    **dict.fromkeys(("GTZAN", "Nsynth_instrument", "VocalSet_tech"), "classification"),
    "Nsynth_pitch": "pitch",
    "GS_key": "key",
    **dict.fromkeys(("EMO_arousal", "EMO_valence"), "regression"),
    **dict.fromkeys(("gtzan_beat", "gtzan_downbeat", "ballroom_beat", "ballroom_downbeat"), "beats"),
    "DSing": "lyrics",
    **dict.fromkeys(("MTT", "MTG_genre", "MTG_emotion", "MTG_instrument", "MTG_top50tags"), "tagging"),
    "Guzheng_Tech": "guzheng",
    "MedleyDB": "melody",
    **dict.fromkeys(("MusicCaps", "SDD"), "captioning"),
    # the development branch (nicolaus625/CMI-bench@35235cb): metrics.development_branch
    **dict.fromkeys(("ArabAndalusian_nawba", "ArabAndalusian_tab", "ArabAndalusian_form", "ArabAndalusian_mizan"),
                    "andalusian"),
    **dict.fromkeys(("Lyra_instrument", "Lyra_genre", "Lyra_place"), "label_set"),
    "Lyra_dance": "yes_no",
    "SongFormBench": "structure",
}
Embed = Callable[[Sequence[str]], np.ndarray]


#: a task that cannot be scored as a whole (the message says why and what to do); defined beside
#: the family loops that raise it for references that leave a metric undefined
TaskError = fam.TaskError


def check_valence_file(task: str, records: Sequence[OutputRecord]) -> None:
    """Refuse EMO_valence outputs produced from the arousal prompt (upstream CMI-Bench bug).

    ``CMI_EMO_valence.jsonl`` is byte-identical to the arousal file: the models were asked for
    arousal and the references are arousal annotations, so a "valence" score is an arousal score.
    """
    if task != "EMO_valence" or not records:
        return
    asks_arousal = sum("arousal" in r.question.lower() and "valence" not in r.question.lower() for r in records)
    if asks_arousal > len(records) / 2:
        raise TaskError(
            f"EMO_valence: {asks_arousal} of {len(records)} questions ask for AROUSAL: this output was "
            "generated from CMI_EMO_valence.jsonl, which upstream is a copy of the arousal file, so it "
            "measures arousal, not valence. Regenerate with a valence instruction and valence references, "
            "or score it with --compat cmi-bench to reproduce the published (arousal) number"
        )


def _classification(task: str, records: Sequence[OutputRecord], compat: str | None) -> TaskResult:
    from musiceval.protocols.mir.metrics.classification import (
        accuracy_items,
        majority_predictions,
        per_label_accuracy,
    )

    golds = [r.correct_answer for r in records]
    values, failures = fam.classify(task, records, compat, CLASS_VOCABULARIES.get(task, ()))
    majority = majority_predictions(golds)
    base = accuracy_items(golds, majority)
    res = TaskResult(task, compat, len(records), {"accuracy": float(np.mean(values)) if len(values) else float("nan")})
    res.per_item["accuracy"] = _scores("accuracy", records, values)
    res.baseline["accuracy"] = _scores("accuracy", records, base)
    res.baseline_metrics = {"accuracy": float(base.mean()) if len(base) else float("nan"), "majority_label": majority[0] if majority else ""}  # type: ignore[dict-item]
    res.failures = failures
    res.breakdown["per_label"] = per_label_accuracy(golds, values)
    return res


def _key(task: str, records: Sequence[OutputRecord], compat: str | None) -> TaskResult:
    from musiceval.protocols.mir.metrics.classification import (
        key_weighted_items,
        majority_predictions,
        per_label_accuracy,
    )

    import mir_eval

    def readable(key: str) -> bool:
        try:
            mir_eval.key.validate_key(key)
        except ValueError:
            return False
        return True

    # An item whose reference key mir_eval cannot read ("12345", "Infinity", a zero-width character)
    # is a per-item failure (reported by key_scores) left out of the model's and the majority
    # baseline's scores alike; it never stops the task.
    keep = [readable(r.correct_answer) for r in records]
    golds = [r.correct_answer for r, k in zip(records, keep) if k]
    values, failures = fam.key_scores(records, compat)
    kept = np.asarray([v for v, k in zip(values, keep) if k], dtype=float)
    base = key_weighted_items(golds, majority_predictions(golds))
    res = TaskResult(task, compat, len(records), {"weighted_score": float(np.mean(kept)) if len(kept) else float("nan")})
    res.per_item["weighted_score"] = _scores("weighted_score", records, values, keep)
    sel = [r for r, k in zip(records, keep) if k]
    res.baseline["weighted_score"] = _scores("weighted_score", sel, base)
    res.baseline_metrics = {"weighted_score": float(base.mean()) if len(base) else float("nan")}
    res.failures = failures
    res.breakdown["per_label"] = per_label_accuracy(golds, kept)
    return res


def _regression(task: str, records: Sequence[OutputRecord], compat: str | None) -> TaskResult:
    if compat is None:
        check_valence_file(task, records)
    contrib, keep, failures, baseline, notes = fam.regression_scores(records, compat)
    sel = [r for r, k in zip(records, keep) if k]
    res = TaskResult(task, compat, len(records), {"r2": float(np.mean(contrib))})
    res.per_item["r2"] = _scores("r2", sel, contrib)
    res.baseline["r2"] = _scores("r2", sel, baseline)
    res.baseline_metrics = {"r2": float(np.mean(baseline))}
    res.failures = failures
    res.notes.extend(notes)
    if task == "EMO_valence":
        res.notes.append("EMO_valence upstream is a copy of EMO_arousal: this number measures arousal")
    return res


def _beats(task: str, records: Sequence[OutputRecord], compat: str | None, baseline_memo: Any = None) -> TaskResult:
    table, keep, failures, base_table, tempo = fam.beat_table(records, compat, baseline_memo=baseline_memo)
    sel = [r for r, k in zip(records, keep) if k]
    res = TaskResult(task, compat, len(records), {m: float(np.mean(v)) if len(v) else float("nan") for m, v in table.items()})
    for m in table:
        res.per_item[m] = _scores(m, sel, table[m])
        res.baseline[m] = _scores(m, sel, base_table[m])
    res.baseline_metrics = {m: float(np.mean(v)) if len(v) else float("nan") for m, v in base_table.items()}
    res.baseline_metrics["tempo_bpm"] = tempo
    res.failures = failures
    return res


def _lyrics(task: str, records: Sequence[OutputRecord], compat: str | None) -> TaskResult:
    wer, cer, keep, failures = fam.lyrics_scores(records, compat)
    sel = [r for r, k in zip(records, keep) if k]
    res = TaskResult(task, compat, len(records), {"wer": float(np.mean(wer)) if wer else float("nan"), "cer": float(np.mean(cer)) if cer else float("nan")})
    res.per_item["wer"] = _scores("wer", sel, wer)
    res.per_item["cer"] = _scores("cer", sel, cer)
    # the empty transcript: every reference word deleted, WER = CER = 1
    res.baseline["wer"] = _scores("wer", sel, [1.0] * len(sel))
    res.baseline["cer"] = _scores("cer", sel, [1.0] * len(sel))
    res.baseline_metrics = {"wer": 1.0, "cer": 1.0}
    res.failures = failures
    return res


#: the per-item ranking metrics of tagging, by name, each scored for the answer-blind rankings too
RANKING_METRICS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {"item_roc_auc": per_item_auc}


def blind_rankings(records: Sequence[OutputRecord], y_true: np.ndarray, scores: np.ndarray, keep: np.ndarray,
                   metric: str = "item_roc_auc") -> list[BlindStrategy]:
    """Tagging's answer-blind rankings scored per item on the kept items (those with a true and a
    false tag): the tag-frequency ranking (an oracle prior: it reads the references' label
    distribution, :func:`musiceval.protocols.mir.metrics.tagging.tag_frequency_ranking`) and the tag scores of
    the file's most common response (:func:`musiceval.protocols.mir.metrics.tagging.most_common_response`),
    each sent as every item's answer and scored by the ranking metric ``metric`` (:data:`RANKING_METRICS`)."""
    from musiceval.protocols.mir.metrics.tagging import constant_ranking_scores, most_common_response, tag_frequency_ranking

    if metric not in RANKING_METRICS:
        raise KeyError(f"blind_rankings: {metric!r} is not a tagging ranking metric; choose from {', '.join(RANKING_METRICS)}")
    score = RANKING_METRICS[metric]
    sel = [r for r, k in zip(records, keep) if k]
    truth = np.asarray(y_true)[keep]
    texts = [r.response.lower().strip() for r in records]
    common = most_common_response(texts)
    shown = texts[common] if len(texts[common]) <= 80 else texts[common][:77] + "..."
    return [
        BlindStrategy("tag-frequency ranking",
                      "the tags ranked by how many references hold them, the same ranking for every item (an oracle "
                      "prior: the strongest constant ranking an adversary who knew the label distribution could send)",
                      _scores(metric, sel, constant_ranking_scores(truth, tag_frequency_ranking(y_true), score))),
        BlindStrategy("most common response",
                      f"the file's most common response ({shown!r}, {texts.count(texts[common])} of {len(texts)}) "
                      "sent for every item",
                      _scores(metric, sel, constant_ranking_scores(truth, np.asarray(scores)[common], score))),
    ]


def _tagging(task: str, records: Sequence[OutputRecord], compat: str | None, embed: Embed | None, query_prefix: str,
             bertscorer: Any = None) -> TaskResult:
    from musiceval.protocols.mir.metrics.tagging import macro_auc, per_item_auc

    if embed is None:
        raise TaskError(f"{task}: tagging needs a text encoder (pass --encoder, e.g. minilm or bge:BAAI/bge-large-en-v1.5)")
    tags = tuple(sorted(t.lower().strip() for t in TAG_VOCABULARIES[task]))
    y_true, scores = fam.tag_matrices(records, tags, compat, embed, query_prefix)
    at_35235cb = bool(compat) and not is_old(compat)  # 35235cb averages PR-AUC over every tag (docs/cmi-bench.md)
    summary = macro_auc(y_true, scores, tags, pr_all_tags=at_35235cb)
    res = TaskResult(task, compat, len(records), {"roc_auc": summary["roc_auc"], "pr_auc": summary["pr_auc"]})  # type: ignore[dict-item]
    if at_35235cb and bertscorer is not None:  # 35235cb's second branch: per-tag BERTScore recall
        bert = macro_auc(y_true, fam.tag_matrices_bertscore(records, tags, compat, bertscorer)[1], tags, pr_all_tags=True)
        res.metrics.update({"bertscore_roc_auc": bert["roc_auc"], "bertscore_pr_auc": bert["pr_auc"]})  # type: ignore[dict-item]
    item_auc = per_item_auc(y_true, scores)
    keep = ~np.isnan(item_auc)
    sel = [r for r, k in zip(records, keep) if k]
    res.per_item["item_roc_auc"] = _scores("item_roc_auc", sel, item_auc[keep])
    res.answer_blind["item_roc_auc"] = blind_rankings(records, y_true, scores, keep)
    res.baseline_metrics = {"roc_auc": 0.5}
    res.breakdown["per_tag"] = summary["per_tag"]
    if summary["excluded"]:
        res.notes.append(f"tags without both classes, left out of the macro mean: {', '.join(summary['excluded'])}")  # type: ignore[arg-type]
    if int((~keep).sum()):
        res.notes.append(f"{int((~keep).sum())} items without a true tag have no per-item AUC")
    return res


def _guzheng(task: str, records: Sequence[OutputRecord], compat: str | None) -> TaskResult:
    out = fam.guzheng_scores(records, compat)
    res = TaskResult(task, compat, len(records), out["metrics"])
    sel = [r for r, k in zip(records, out["keep"]) if k]
    res.per_item["item_f1"] = _scores("item_f1", sel, out["item_f1"])
    res.baseline["item_f1"] = _scores("item_f1", sel, out["baseline_item_f1"])
    res.baseline_metrics = out["baseline_metrics"]
    res.failures = out["failures"]
    res.breakdown["per_class_f1"] = out["per_class_f1"]
    if compat:
        res.notes.append("cmi-bench labels: 'macro_f1' holds the micro F1 and 'micro_f1' the macro F1 (toolkit swap)")
    return res


def _melody(task: str, records: Sequence[OutputRecord], compat: str | None) -> TaskResult:
    values, keep, failures = fam.melody_scores(records, compat)
    sel = [r for r, k in zip(records, keep) if k]
    res = TaskResult(task, compat, len(records), {"overall_accuracy": float(np.mean(values)) if values else float("nan")})
    res.per_item["overall_accuracy"] = _scores("overall_accuracy", sel, values)
    res.failures = failures
    return res


def _captioning(task: str, records: Sequence[OutputRecord], compat: str | None, bertscorer: Any,
                lexical_cache: Any = None) -> TaskResult:
    from musiceval.protocols.mir.metrics.captioning import caption_scores

    per_metric, failures, notes = caption_scores([r.correct_answer for r in records], [r.response for r in records],
                                                 compat=compat, bertscorer=bertscorer, lexical_cache=lexical_cache)
    res = TaskResult(task, compat, len(records), {m: float(np.mean(v)) for m, v in per_metric.items()})
    for m, v in per_metric.items():
        res.per_item[m] = _scores(m, records, v)
    res.failures = failures
    res.notes.extend(notes)
    return res


def score_task(
    task: str,
    records: Sequence[OutputRecord],
    *,
    compat: str | None = None,
    embed: Embed | None = None,
    query_prefix: str = "",
    bertscorer: Any = None,
    baseline_memo: Any = None,
    lexical_cache: Any = None,
) -> TaskResult:
    """Score one task's output records.

    Parameters
    ----------
    task : str
        A CMI-Bench task name (see :data:`FAMILIES`).
    records : sequence of OutputRecord
        The well-formed records of the output file (malformed ones are the loader's failures).
    compat : None or one of :data:`musiceval.protocols.mir.metrics.compat.COMPAT_MODES`
        Scoring rules: corrected (default) or the toolkit's ("cmi-bench"; "cmi-bench@<commit>" for
        one toolkit commit as a whole).
    embed : callable, optional
        Texts -> L2-normalised embedding rows; required for tagging tasks.
    query_prefix : str
        Text put before each response before embedding (BGE's retrieval instruction in default
        mode when the encoder is BGE; empty in compat mode, as the toolkit's ``encode`` adds none).
    bertscorer : bert_score.BERTScorer, optional
        The BERTScore model of the captioning tasks (the toolkit's is roberta-large, layer 17);
        without it captioning has no BERTScore keys and a note says so.
    baseline_memo : optional
        A store (``get(key)``, ``memo[key] = table``) for trivial-baseline tables that depend on the
        references only (beats: the metronome), so they are computed once per reference set;
        :class:`musiceval.protocols.mir.engine.BaselineStore` keeps them on disk. Values are unchanged.
    lexical_cache : optional
        Captioning's lexical scores kept between runs
        (:class:`musiceval.metrics.lexical_cache.LexicalScoreCache`). Values are unchanged.
    """
    check_compat(compat)
    family = FAMILIES.get(task)
    if family is None:
        raise ValueError(f"unknown CMI-Bench task {task!r}; one of {', '.join(FAMILIES)}")
    if not records:
        raise TaskError(f"{task}: no scorable records")
    if family in ("classification", "pitch"):
        return _classification(task, records, compat)
    if family == "tagging":
        return _tagging(task, records, compat, embed, query_prefix, bertscorer)
    if family == "captioning":
        return _captioning(task, records, compat, bertscorer, lexical_cache)
    if family == "beats":
        return _beats(task, records, compat, baseline_memo)
    from musiceval.protocols.mir.metrics.development_branch import BUILDERS

    if family in BUILDERS:
        return BUILDERS[family](task, family, records, compat)
    return {
        "key": _key, "regression": _regression, "beats": _beats, "lyrics": _lyrics,
        "guzheng": _guzheng, "melody": _melody,
    }[family](task, records, compat)


def is_bge(encoder_spec: str) -> bool:
    """Whether an encoder spec names a BGE model (its query instruction then applies by default)."""
    return bool(re.search(r"(^bge:|bge-)", encoder_spec, re.IGNORECASE))
