"""Task results of the tasks the CMI-Bench development branch added (nicolaus625/CMI-bench@35235cb,
its README: "This branch extends the original ISMIR release"): Arab-Andalusian nawba, tab, form and
mizan, Lyra instrument, genre, place and dance, and SongFormBench. Each family's rule is in its
module (:mod:`~musiceval.protocols.mir.metrics.single_label`,
:mod:`~musiceval.protocols.mir.metrics.label_sets`, :mod:`~musiceval.protocols.mir.metrics.structure`);
:func:`musiceval.protocols.mir.metrics.tasks.score_task` dispatches here through :data:`BUILDERS`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from musiceval.protocols.mir.metrics.task_result import TaskResult, item_scores as _scores
from musiceval.schemas import OutputRecord
from musiceval.vocab.cmibench import CLASS_VOCABULARIES, LABEL_SET_VOCABULARIES


def single_label(task: str, family: str, records: Sequence[OutputRecord], compat: str | None) -> TaskResult:
    """``accuracy`` of an Arab-Andalusian or Lyra dance file, with the majority-label baseline."""
    from musiceval.protocols.mir.metrics.classification import accuracy_items, majority_predictions, per_label_accuracy
    from musiceval.protocols.mir.metrics.single_label import RULES

    golds = [r.correct_answer for r in records]
    values, failures = RULES[family](task, records, compat, CLASS_VOCABULARIES.get(task, ()))
    majority = majority_predictions(golds)
    base = accuracy_items(golds, majority)
    res = TaskResult(task, compat, len(records), {"accuracy": float(np.mean(values))})
    res.per_item["accuracy"] = _scores("accuracy", records, values)
    res.baseline["accuracy"] = _scores("accuracy", records, base)
    res.baseline_metrics = {"accuracy": float(base.mean()), "majority_label": majority[0]}  # type: ignore[dict-item]
    res.failures = failures
    res.breakdown["per_label"] = per_label_accuracy(golds, values)
    return res


def label_set(task: str, family: str, records: Sequence[OutputRecord], compat: str | None) -> TaskResult:
    """``micro_f1``, ``macro_f1``, ``exact_match`` and per-item ``item_f1`` of a Lyra label-set file."""
    from musiceval.protocols.mir.metrics.label_sets import label_set_scores

    out = label_set_scores(task, records, compat, LABEL_SET_VOCABULARIES.get(task, ()))
    res = TaskResult(task, compat, len(records), dict(out["metrics"]))
    res.per_item["item_f1"] = _scores("item_f1", records, out["item_f1"])
    res.baseline["item_f1"] = _scores("item_f1", records, out["baseline_item_f1"])
    res.baseline_metrics = {**out["baseline_metrics"], "label_set": ", ".join(out["baseline_set"])}
    res.failures = out["failures"]
    res.breakdown["per_label_f1"] = out["per_label_f1"]
    if compat:
        res.notes.append(f"cmi-bench labels: the {len(out['per_label_f1'])} labels the references hold, named by substring")
    return res


def structure(task: str, family: str, records: Sequence[OutputRecord], compat: str | None) -> TaskResult:
    """Boundary, pairwise, Rand and deviation scores of a SongFormBench file, with the no-boundary baseline."""
    from musiceval.protocols.mir.metrics.structure import METRICS, mean, structure_table

    out = structure_table(records, compat)
    sel = [r for r, k in zip(records, out["keep"]) if k]
    res = TaskResult(task, compat, len(records), {m: mean(out["table"][m], compat) for m in METRICS})
    for m in METRICS:  # an undefined deviation (NaN) is no per-item score: the gates pair defined values only
        res.per_item[m] = _scores(m, sel, out["table"][m], [not np.isnan(v) for v in out["table"][m]])
        if not np.isnan(out["baseline"][m]).all():
            res.baseline[m] = _scores(m, sel, out["baseline"][m], [not np.isnan(v) for v in out["baseline"][m]])
    res.baseline_metrics = {m: mean(out["baseline"][m], None) for m in METRICS}
    res.failures = out["failures"]
    res.notes.extend(out["notes"])
    return res


#: family -> the function that scores one of its files
BUILDERS = {"andalusian": single_label, "yes_no": single_label, "label_set": label_set, "structure": structure}
