"""Release gates for MIR tasks as instructions (CMI-Bench protocol, SPEC section 4).

Embedded default (``--model recorded``): slices of MU-LLaMA's and LTU's real CMI-Bench outputs
in ``fixtures/mir/outputs/{mullama,ltu}/<model>_<task>.jsonl`` (see fixtures/README.md).
``--data-dir DIR`` with ``DIR/mir/outputs/<model>/<model>_<task>.jsonl`` scores full files in the
same layout instead (e.g. ``--data-dir ../shared/data`` after linking ``cmi-bench`` as ``mir``).

What runs:

- every task with shipped outputs is scored (default rules) for both models, and the results are
  recorded as a table in the layout of the CMI-Bench results table (rows: model and mode,
  columns: task metric), with the toolkit-compatible numbers next to them;
- each model/task is compared with its trivial baseline (majority class, mean predictor R^2 = 0,
  evenly spaced beats at the median tempo, empty transcript, most frequent technique) on
  per-item scores: a paired gate for the pairs listed in ``[mir] gate_beats_baseline``, a
  FINDING with its interval for the others (the recorded models lose to most baselines);
- accuracy-above-chance gates (``gate_beats_chance``) and tagging gates: the response ranks its
  true tags above its false ones (per-item ROC-AUC above 0.5) with ``tagging_encoder``
  (``gate_tagging_above_chance``); the pairs not listed there are FINDINGs. Which pairs are
  gates is read from the ``thresholds`` fixture (``--thresholds``) in the test body, never at
  collection time. Tagging uses the first ``tagging_items`` records of each file and captioning
  the first ``captioning_items`` (CI time); captioning BERTScore uses ``bertscore_model`` in
  default mode (compat mode would need the toolkit's roberta-large, which the embedded run does
  not load: a note says so).
- the scores are computed once per run: under xdist the first worker that needs them computes
  them under a file lock and the others load its result.

The live-model path (a model answering CMI-Bench instructions) is ``evals/test_mir_live.py``.

MedleyDB and MTG_top50tags have no shipped outputs; EMO_valence is refused in default mode
(upstream its file is a copy of arousal) and appears in the table in compat mode only.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from musiceval.data.cmibench import TASKS, load_outputs
from musiceval.data.cmibench_vocab import CLASS_VOCABULARIES
from musiceval.metrics.mir import FAMILIES, TaskError, TaskResult, score_task

# one worker scores every task once (the scores are a session fixture)
pytestmark = pytest.mark.xdist_group("mir")
PROTOCOL = "mir"
MODELS = {"mullama": "MU-LLaMA", "ltu": "LTU"}
LOWER_IS_BETTER = {"wer", "cer"}


def _outputs_root(fixtures_dir: Path, data_dir: Path | None) -> Path:
    if data_dir is not None and (data_dir / "mir" / "outputs").is_dir():
        return data_dir / "mir" / "outputs"
    return fixtures_dir / "mir" / "outputs"


class MirRun:
    """Scores of every (model, task, mode) on the embedded outputs, computed once per run."""

    def __init__(self, root: Path, results: dict, errors: dict):
        self.root = root
        self.results: dict[tuple[str, str, str | None], TaskResult] = results
        self.errors: dict[tuple[str, str, str | None], str] = errors

    @classmethod
    def compute(cls, root: Path, embed, bertscorer: Callable[[], Any], *, tagging_items: int, captioning_items: int) -> MirRun:
        results: dict[tuple[str, str, str | None], TaskResult] = {}
        errors: dict[tuple[str, str, str | None], str] = {}
        for model in MODELS:
            for task in TASKS:
                path = root / model / f"{model}_{task}.jsonl"
                if not path.is_file():
                    continue
                records = load_outputs(path).records
                if FAMILIES[task] == "tagging":
                    records = records[:tagging_items]
                elif FAMILIES[task] == "captioning":
                    records = records[:captioning_items]
                for compat in (None, "cmi-bench"):
                    scorer = bertscorer() if FAMILIES[task] == "captioning" and compat is None else None
                    try:
                        results[(model, task, compat)] = score_task(task, records, compat=compat, embed=embed, bertscorer=scorer)
                    except TaskError as exc:
                        errors[(model, task, compat)] = str(exc)
        return cls(root, results, errors)

    def tasks(self) -> list[str]:
        return [t for t in TASKS if any((m, t, None) in self.results or (m, t, None) in self.errors for m in MODELS)]


def _shared_across_workers(request, tmp_path_factory, key: str, build: Callable[[], Any]) -> Any:
    """``build()`` once per test run: under xdist the first worker builds it under a file lock and
    pickles it into the run's shared temporary directory, the others load it (pickles written by
    this run only: the file name holds xdist's per-run id)."""
    run_id = getattr(request.config, "workerinput", {}).get("testrunuid")
    if run_id is None:  # one process: nothing to share
        return build()
    from filelock import FileLock

    path = tmp_path_factory.getbasetemp().parent / f"musiceval-{run_id}-{key}.pkl"
    with FileLock(str(path) + ".lock"):
        if path.is_file():
            return pickle.loads(path.read_bytes())
        value = build()
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps(value))
        tmp.replace(path)
        return value


@pytest.fixture(scope="session")
def mir_run(request, tmp_path_factory, fixtures_dir: Path, data_dir: Path | None, thresholds: dict[str, Any],
            embedding_cache) -> MirRun:
    cfg = thresholds["mir"]
    root = _outputs_root(fixtures_dir, data_dir)
    state: dict[str, Any] = {}

    def cached_embed(texts):  # the encoder loads on first use; the suite's file-locked cache
        from musiceval.encoders import embed_distinct, load_text_encoder

        if "encoder" not in state:
            state["encoder"] = load_text_encoder(cfg["tagging_encoder"])
        return embed_distinct(state["encoder"], list(texts), cache=embedding_cache)

    def bertscorer():  # None when it cannot load: the captioning results then carry the note
        if "bertscore" not in state:
            from musiceval.scoring.mir import load_bertscorer

            state["bertscore"] = load_bertscorer(cfg["bertscore_model"], int(cfg["bertscore_layers"]), embedding_cache.root)[0]
        return state["bertscore"]

    def build() -> tuple[dict, dict]:
        run = MirRun.compute(root, cached_embed, bertscorer, tagging_items=int(cfg["tagging_items"]),
                             captioning_items=int(cfg["captioning_items"]))
        return run.results, run.errors

    key = hashlib.sha256(json.dumps([str(root), cfg], sort_keys=True, default=str).encode()).hexdigest()[:16]
    results, errors = _shared_across_workers(request, tmp_path_factory, f"mir-{key}", build)
    return MirRun(root, results, errors)


def _fmt(v: float) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 4)


def test_every_task_metric_is_computed_and_tabulated(mir_run: MirRun, gate):
    """Each shipped task yields finite metrics for both models; the CMI-Bench-style table is recorded."""
    rows: list[dict[str, Any]] = []
    for model, label in MODELS.items():
        for compat in (None, "cmi-bench"):
            row: dict[str, Any] = {"model": label, "mode": compat or "default"}
            for task in mir_run.tasks():
                res = mir_run.results.get((model, task, compat))
                if res is None:
                    row[f"{task}"] = "refused" if (model, task, compat) in mir_run.errors else "no data"
                    continue
                for metric, value in res.metrics.items():
                    row[f"{task} {metric}"] = _fmt(value)
            rows.append(row)
    base: dict[str, Any] = {"model": "trivial baseline", "mode": "default"}
    for task in mir_run.tasks():
        res = mir_run.results.get(("mullama", task, None))
        if res is not None:
            for metric, value in res.baseline_metrics.items():
                if isinstance(value, (int, float)):
                    base[f"{task} {metric}"] = _fmt(value)
    rows.append(base)
    gate.record_table(PROTOCOL, "CMI-Bench results (embedded slices; computed by musiceval from raw outputs)", rows)
    missing = sorted(set(TASKS) - set(mir_run.tasks()))
    gate.finding("tasks without shipped outputs", estimate=len(missing), detail=", ".join(missing), protocol=PROTOCOL)
    for (model, task, compat), res in mir_run.results.items():
        assert res.metrics and all(np.isfinite(v) for v in res.metrics.values()), (model, task, compat)
    assert ("mullama", "EMO_valence", None) in mir_run.errors  # the arousal copy is refused by default


def _comparisons() -> list[tuple[str, str]]:
    return [(m, t) for m in MODELS for t in TASKS if FAMILIES[t] not in ("tagging", "captioning")]


@pytest.mark.parametrize("model,task", _comparisons(), ids=[f"{m}-{t}" for m, t in _comparisons()])
def test_model_beats_its_trivial_baseline(mir_run: MirRun, gate, thresholds, model, task):
    res = mir_run.results.get((model, task, None))
    if res is None:
        _not_scored(gate, mir_run, model, task)
        return
    if not res.baseline:
        gate.finding(f"{model} {task}: no trivial baseline", estimate=math.nan, protocol=PROTOCOL)
        return
    metric = next(iter(res.baseline))
    a, b = res.per_item[metric], res.baseline[metric]
    if metric in LOWER_IS_BETTER:  # compare errors the other way round
        a, b = b, a
    name = f"{model} {task} {metric} > trivial baseline"
    if (model, task) in _listed(thresholds, "gate_beats_baseline"):
        gate.paired_greater(a, b, name=name, protocol=PROTOCOL, metric=metric)
        return
    gate.paired_finding(a, b, name=name, protocol=PROTOCOL, metric=metric,
                        detail=f"model {res.metrics.get(metric, float('nan')):.4f} vs baseline {res.baseline_metrics.get(metric, float('nan')):.4f}; "
                        f"{len(res.failures)} unparsed responses")


def _not_scored(gate, mir_run: MirRun, model: str, task: str) -> None:
    reason = mir_run.errors.get((model, task, None), f"no {model}_{task}.jsonl in {mir_run.root}")
    gate.finding(f"{model} {task}: not scored", estimate=math.nan, detail=reason, protocol=PROTOCOL)


def _listed(thresholds, key: str) -> dict[tuple[str, str], str]:
    """``[mir] <key>`` entries ``"model:task[:value]"`` by (model, task)."""
    out = {}
    for entry in thresholds["mir"][key]:
        parts = str(entry).split(":")
        if len(parts) < 2:
            raise ValueError(f"thresholds [mir] {key}: {entry!r} is not 'model:task[:value]'")
        out[(parts[0], parts[1])] = parts[2] if len(parts) > 2 else ""
    return out


CLASSIFICATION = [(m, t) for m in MODELS for t in TASKS if FAMILIES[t] in ("classification", "pitch")]
TAGGING = [(m, t) for m in MODELS for t in TASKS if FAMILIES[t] == "tagging" and t != "MTG_top50tags"]


def test_listed_mir_gates_name_pairs_this_module_checks(thresholds):
    """A (model, task) listed as a gate that no test here checks would be silently ignored."""
    checked = {
        "gate_beats_baseline": set(_comparisons()),
        "gate_beats_chance": set(CLASSIFICATION),
        "gate_tagging_above_chance": set(TAGGING),
    }
    for key, pairs in checked.items():
        unknown = sorted(set(_listed(thresholds, key)) - pairs)
        assert not unknown, f"thresholds [mir] {key} lists {unknown}, which no test in evals/test_mir.py checks"


@pytest.mark.parametrize("model,task", CLASSIFICATION, ids=[f"{m}-{t}" for m, t in CLASSIFICATION])
def test_accuracy_beats_uniform_chance(mir_run: MirRun, gate, thresholds, model, task):
    res = mir_run.results.get((model, task, None))
    if res is None:
        _not_scored(gate, mir_run, model, task)
        return
    listed = _listed(thresholds, "gate_beats_chance")
    accuracy = res.per_item["accuracy"]
    n_classes = len(CLASS_VOCABULARIES[task])
    if (model, task) in listed:  # "model:task:chance"; without a chance, uniform over the classes
        chance = float(listed[(model, task)] or 1.0 / n_classes)
        gate.binomial_greater(accuracy, chance, name=f"{model} {task} accuracy > {chance:g}", protocol=PROTOCOL)
        return
    gate.interval_finding(accuracy, name=f"{model} {task} accuracy", protocol=PROTOCOL, metric="accuracy",
                          detail=f"uniform chance 1/{n_classes} = {1.0 / n_classes:.4f}; not a release gate "
                                 "(not in [mir] gate_beats_chance)")


@pytest.mark.parametrize("model,task", TAGGING, ids=[f"{m}-{t}" for m, t in TAGGING])
def test_tagging_response_ranks_true_tags_above_false(mir_run: MirRun, gate, thresholds, model, task):
    res = mir_run.results.get((model, task, None))
    if res is None:
        _not_scored(gate, mir_run, model, task)
        return
    auc = res.per_item["item_roc_auc"]
    name = f"{model} {task} per-item ROC-AUC > 0.5"
    if (model, task) in _listed(thresholds, "gate_tagging_above_chance"):
        gate.greater_than_chance(auc, 0.5, name=name, protocol=PROTOCOL)
        return
    gate.interval_finding(auc, name=name, protocol=PROTOCOL, metric="item_roc_auc",
                          detail="chance 0.5; not a release gate (not in [mir] gate_tagging_above_chance)")
