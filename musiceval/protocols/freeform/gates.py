"""Free-form QA gates (docs/protocols/freeform.md): which metrics tell the model's answers from wrong ones.

Runs once per free-form answer set of the declared model(s) and per registered free-form metric
(:data:`musiceval.metrics.registry.METRICS`: a metric registered by any module, e.g. chrF, is
picked up here). On top of the generic gates (``test_model_gates.py``: the headline metric's
Correct vs Random is "the model listens"):

- every other metric: Correct > Random, paired by item and clustered by track. The n-gram
  metrics' comparison is a FINDING by default (their registry role: the paper's Table 2 shows they
  barely separate Correct from Random); the suite config can promote it;
- Skyline > Adversarial per metric, with the rewrites the answers entry names: a gate for
  CLAPText (the paper's claim), a FINDING for the others (a surface or general-purpose metric is
  expected to prefer the lexically close adversarial rewrite);
- the condition-means table (the paper's Table 2 for this run).

Without CLAP weights the CLAPText/CLAPAudio checks skip naming ``huggingface-cli download
laion/larger_clap_music`` (a failure under ``--strict``); CLAPAudio needs the items' audio.
"""
from __future__ import annotations

import pytest

from musiceval.metrics.registry import METRICS
from musiceval.protocols import checks
from musiceval.keys import margin_for

#: the tests and fixtures this module contributes (``musiceval.evals.release_gates`` gathers them)
__all__ = [
    "test_metric_correct_beats_random",
    "test_metric_scores_skyline_above_adversarial",
    "test_condition_means_table",
]
PROTOCOL = "freeform"
#: metrics whose Skyline > Adversarial is a release gate by default (the paper's claim for CLAPText)
SKYLINE_GATES = {"clap_text"}


def _freeform_metrics() -> list[str]:
    return [name for name, spec in METRICS.items() if getattr(spec, "protocol", "freeform") == PROTOCOL]


def _scores_or_skip(run, gate, metric: str, *conditions: str):
    try:
        return [run.scores(metric, c) for c in conditions]
    except FileNotFoundError as exc:  # model weights absent (CLAP): the message names the download
        gate.skip(f"{metric}: {exc}")
    except ValueError as exc:  # e.g. clap_audio without the items' audio
        gate.skip(f"{metric}: {exc}", applicable=False)


@pytest.mark.parametrize("metric", _freeform_metrics())
def test_metric_correct_beats_random(run, gate, thresholds, metric):
    if metric == run.headline:
        gate.skip(f"{metric} is the free-form headline: its Correct vs Random is the 'model listens' gate",
                  applicable=False)
    if metric not in run.metrics or "random" not in run.conditions:
        gate.skip(f"{run.model} {run.source}: no {metric} scores under Correct and Random", applicable=False)
    _scores_or_skip(run, gate, metric, "correct", "random")
    checks.correct_beats(gate, run, metric, "random", check="correct_beats_random",
                         margin=margin_for(thresholds[PROTOCOL], metric))


@pytest.mark.parametrize("metric", _freeform_metrics())
@pytest.mark.musiceval_self_check  # both conditions rewrite the reference: a property of the metric, not of the model
def test_metric_scores_skyline_above_adversarial(run, gate, thresholds, metric):
    if not {"skyline", "adversarial"} <= set(run.conditions) or metric not in run.metrics:
        gate.skip(f"{run.model} {run.source}: no Skyline/Adversarial rewrites (name them with 'rewrites' in the "
                  "answers entry; `musiceval rewrite` writes LLM ones)", applicable=False)
    _scores_or_skip(run, gate, metric, "skyline", "adversarial")
    g = checks.bind(gate, run, "skyline_beats_adversarial", metric,
                    default_role="gate" if metric in SKYLINE_GATES else "finding")
    info = run.metric_info(metric)
    hi, lo = run.scores(metric, "skyline"), run.scores(metric, "adversarial")
    if not info.higher_is_better:
        hi, lo = lo, hi
    g.paired_greater(hi, lo, name=f"{run.model} {run.source} {metric}: skyline > adversarial",
                     margin=g.margin(margin_for(thresholds[PROTOCOL], metric)), protocol=PROTOCOL, metric=metric,
                     scale=info.scale)


def test_condition_means_table(run, gate):
    """The paper's Table 2 for this run: metric x condition means (metrics whose encoder loads)."""
    rows = []
    for metric in run.metrics:
        row = {"metric": metric}
        for condition in run.conditions:
            try:
                s = run.scores(metric, condition)
            except (FileNotFoundError, ValueError):
                break
            row[condition], row[f"n_{condition}"] = round(s.mean(), 4), s.n
        else:
            rows.append(row)
    assert rows, f"{run.model} {run.source}: no metric could be scored"
    gate.record_table(PROTOCOL, f"{run.model} {run.source}: condition means", rows)
