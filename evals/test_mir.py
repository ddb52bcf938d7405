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
  true tags above its false ones (per-item ROC-AUC above 0.5) with ``tagging_encoder``.
  Tagging and captioning use the first ``tagging_items`` records of each file (CI time).

MedleyDB and MTG_top50tags have no shipped outputs; EMO_valence is refused in default mode
(upstream its file is a copy of arousal) and appears in the table in compat mode only.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from musiceval.data.cmibench import TASKS, load_outputs
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
    """Scores of every (model, task, mode) on the embedded outputs, computed once per worker."""

    def __init__(self, root: Path, embed, tagging_items: int):
        self.root = root
        self.results: dict[tuple[str, str, str | None], TaskResult] = {}
        self.errors: dict[tuple[str, str, str | None], str] = {}
        for model in MODELS:
            for task in TASKS:
                path = root / model / f"{model}_{task}.jsonl"
                if not path.is_file():
                    continue
                records = load_outputs(path).records
                if FAMILIES[task] in ("tagging", "captioning"):
                    records = records[:tagging_items]
                for compat in (None, "cmi-bench"):
                    try:
                        self.results[(model, task, compat)] = score_task(task, records, compat=compat, embed=embed)
                    except TaskError as exc:
                        self.errors[(model, task, compat)] = str(exc)

    def tasks(self) -> list[str]:
        return [t for t in TASKS if any((m, t, None) in self.results or (m, t, None) in self.errors for m in MODELS)]


@pytest.fixture(scope="session")
def mir_run(fixtures_dir: Path, data_dir: Path | None, thresholds: dict[str, Any], embedding_cache) -> MirRun:
    cfg = thresholds["mir"]
    state: dict[str, Any] = {}

    def cached_embed(texts):  # the encoder loads on first use; the suite's file-locked cache
        from musiceval.encoders import embed_distinct, load_text_encoder

        if "encoder" not in state:
            state["encoder"] = load_text_encoder(cfg["tagging_encoder"])
        return embed_distinct(state["encoder"], list(texts), cache=embedding_cache)

    return MirRun(_outputs_root(fixtures_dir, data_dir), cached_embed, int(cfg["tagging_items"]))


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
        reason = mir_run.errors.get((model, task, None), f"no {model}_{task}.jsonl in {mir_run.root}")
        gate.finding(f"{model} {task}: not scored", estimate=math.nan, detail=reason, protocol=PROTOCOL)
        return
    if not res.baseline:
        gate.finding(f"{model} {task}: no trivial baseline", estimate=math.nan, protocol=PROTOCOL)
        return
    metric = next(iter(res.baseline))
    a, b = res.per_item[metric], res.baseline[metric]
    if metric in LOWER_IS_BETTER:  # compare errors the other way round
        a, b = b, a
    name = f"{model} {task} {metric} > trivial baseline"
    if f"{model}:{task}" in thresholds["mir"]["gate_beats_baseline"]:
        gate.paired_greater(a, b, name=name, protocol=PROTOCOL, metric=metric)
        return
    gate.paired_finding(a, b, name=name, protocol=PROTOCOL, metric=metric,
                        detail=f"model {res.metrics.get(metric, float('nan')):.4f} vs baseline {res.baseline_metrics.get(metric, float('nan')):.4f}; "
                        f"{len(res.failures)} unparsed responses")


def _chance_gates() -> list[tuple[str, str, float]]:
    import tomllib

    cfg = tomllib.loads((Path(__file__).parent / "thresholds.toml").read_text(encoding="utf-8"))["mir"]
    return [(m, t, float(c)) for m, t, c in (s.split(":") for s in cfg["gate_beats_chance"])]


@pytest.mark.parametrize("model,task,chance", _chance_gates(), ids=[f"{m}-{t}" for m, t, _ in _chance_gates()])
def test_accuracy_beats_uniform_chance(mir_run: MirRun, gate, model, task, chance):
    res = mir_run.results.get((model, task, None))
    if res is None:
        gate.skip(f"{model} {task} not scored: {mir_run.errors.get((model, task, None), 'no outputs')}")
    gate.binomial_greater(res.per_item["accuracy"], chance, name=f"{model} {task} accuracy > {chance:g}", protocol=PROTOCOL)


@pytest.mark.parametrize("pair", ["ltu:MTT", "mullama:MTT"])
def test_tagging_response_ranks_true_tags_above_false(mir_run: MirRun, gate, thresholds, pair):
    model, task = pair.split(":")
    if pair not in thresholds["mir"]["gate_tagging_above_chance"]:
        gate.skip(f"{pair} not listed in [mir] gate_tagging_above_chance")
    res = mir_run.results.get((model, task, None))
    if res is None:
        gate.skip(f"{model} {task} not scored")
    gate.greater_than_chance(res.per_item["item_roc_auc"], 0.5, name=f"{model} {task} per-item ROC-AUC > 0.5", protocol=PROTOCOL)
