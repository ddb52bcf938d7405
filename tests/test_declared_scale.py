"""The metric's declaration, not its values, decides whether its per-item scores are 0/1 outcomes
and which range bounds its interval (musiceval.stats.scales; docs/regression-gates.md, "Binary or
continuous: the metric declares it").

A metric in seconds whose few items happen to score 0 s or 1 s is not a proportion: no
Clopper-Pearson, no McNemar/Tango, no interval clipped to [0, 1]. A declared accuracy keeps the
exact binomial interval it had. A metric declared binary whose values are not 0/1 is an error
naming the metric, never a quiet switch to another test. Every gate of the suite's protocols passes
the declaration (none is read from the values), and ``musiceval compare`` reads it back from the
per-item scores a run recorded.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from musiceval.gates import Gate, GateConfig
from musiceval.protocols import checks, load_protocol
from musiceval.protocols.base import Chance, MetricInfo, Protocol
from musiceval.protocols.mir.protocol import SCALES, UNITS
from musiceval.records import ItemScores
from musiceval.stats import intervals
from musiceval.stats.scales import BINARY, SECONDS, UNBOUNDED, UNIT, Scale, bounded, describe, from_values, parse

ROOT = Path(__file__).resolve().parents[1]
#: 28 of 30 items at 1 s, two at 0 s: a mean near the top of [0, 1] whose t interval reaches past 1
MOSTLY_ONE = np.array([1.0] * 28 + [0.0] * 2)


def _scores(values, metric="m", condition="correct", groups=None) -> ItemScores:
    return ItemScores(metric, [f"i{k}" for k in range(len(values))], values, groups=groups, condition=condition)


# ------------------------------------------------------------------------------- the pure intervals


def test_seconds_all_zero_or_one_get_a_continuous_interval_not_clipped_to_the_unit_range():
    bound = intervals.one_sample_interval(MOSTLY_ONE, scale=SECONDS)
    assert bound.shape == "continuous"
    assert "Clopper-Pearson" not in bound.method and bound.method.startswith("skew-corrected t")
    assert bound.high > 1.0  # a mean of seconds may lie above 1 s: the interval is not clipped there
    assert bound.low >= 0.0  # and never below the declared 0 s
    # the values alone read the same numbers as a proportion (the behaviour this replaces)
    read = intervals.one_sample_interval(MOSTLY_ONE)
    assert read.shape == "binary" and "Clopper-Pearson" in read.method and read.high <= 1.0


def test_a_declared_accuracy_keeps_its_exact_binomial_interval():
    declared = intervals.one_sample_interval(MOSTLY_ONE, scale=BINARY)
    assert "Clopper-Pearson" in declared.method and declared.shape == "binary"
    assert 0.0 <= declared.low < declared.high <= 1.0
    assert declared == intervals.one_sample_interval(MOSTLY_ONE)  # what 0/1 values got before the declaration


def test_paired_seconds_all_zero_or_one_get_no_tango_interval():
    rng = np.random.default_rng(3)
    new, old = (rng.random(60) < 0.7).astype(float), (rng.random(60) < 0.4).astype(float)
    seconds = intervals.paired_interval(new, old, scale=SECONDS)
    assert "Tango" not in seconds.method and seconds.shape == "continuous"
    accuracy = intervals.paired_interval(new, old, scale=BINARY)
    assert accuracy.method.startswith("Tango") and accuracy == intervals.paired_interval(new, old)


def test_tiny_n_uses_the_declared_range_for_the_bernstein_bound():
    x = np.array([0.2, 0.4, 0.3, 0.5, 0.1])
    assert intervals.one_sample_interval(x, scale=UNIT).method.startswith("empirical Bernstein bound (values in [0, 1]")
    assert intervals.one_sample_interval(x, scale=bounded(0, 10)).method.startswith(
        "empirical Bernstein bound (values in [0, 10]")
    # seconds have no upper bound: no finite-sample bound on an assumed range
    assert intervals.one_sample_interval(x, scale=SECONDS).method.startswith("skew-corrected t")


def test_the_difference_of_a_declared_range_bounds_the_paired_interval():
    rng = np.random.default_rng(0)
    new, old = rng.uniform(-1, 1, 8), rng.uniform(-1, 1, 8)  # a cosine, tiny n
    bound = intervals.paired_interval(new, old, scale=bounded(-1, 1))
    assert bound.method.startswith("empirical Bernstein bound (values in [-2, 2]")
    assert -2.0 <= bound.low <= bound.high <= 2.0


# ------------------------------------------------------------------------------- the gates


def test_a_gate_on_seconds_records_the_declared_scale_and_a_continuous_test():
    gate = Gate(GateConfig(n_resamples=500))
    s = _scores(MOSTLY_ONE, metric="deviation_ref_to_est")
    r = gate.greater_than_chance(s, 0.5, name="seconds", scale=SECONDS)
    assert "shape=continuous" in r.test and "Clopper-Pearson" not in r.test
    assert r.scale == "continuous in [0, inf)"
    assert r.ci[1] + 0.5 > 1.0  # the mean's upper bound lies above 1 s
    undeclared = gate.greater_than_chance(s, 0.5, name="read")
    assert "read from the values" in undeclared.scale and "Clopper-Pearson" in undeclared.test


def test_a_declared_accuracy_gate_is_unchanged_by_the_declaration():
    gate = Gate(GateConfig(n_resamples=500))
    rng = np.random.default_rng(1)
    a = _scores((rng.random(80) < 0.7).astype(float), metric="accuracy")
    b = _scores((rng.random(80) < 0.5).astype(float), metric="accuracy", condition="random")
    for run in ("binomial_greater", "greater_than_chance"):
        declared, read = getattr(gate, run)(a, 0.25, name=run, scale=BINARY), getattr(gate, run)(a, 0.25, name=run)
        assert (declared.ci, declared.p_value, declared.test) == (read.ci, read.p_value, read.test)
        assert declared.scale == "binary (0/1 outcomes)"
    declared, read = gate.paired_greater(a, b, name="p", scale=BINARY), gate.paired_greater(a, b, name="p")
    assert (declared.ci, declared.p_value, declared.test) == (read.ci, read.p_value, read.test)
    assert "Tango" in declared.test


def test_a_metric_declared_binary_with_other_values_is_an_error_naming_it():
    gate = Gate(GateConfig(n_resamples=200))
    with pytest.raises(ValueError, match=r"overall_accuracy: declared binary .* 0\.25"):
        gate.greater_than_chance(_scores([1.0, 0.25, 0.0], metric="overall_accuracy"), 0.1, name="x", scale=BINARY)
    with pytest.raises(ValueError, match=r"wer: declared continuous in \[0, 1\] but its per-item values run from 0 to 1\.5"):
        gate.at_least(_scores([0.0, 1.5, 0.5], metric="wer"), 0.1, name="y", scale=UNIT)


def test_a_proportion_test_refuses_a_metric_declared_continuous():
    gate = Gate(GateConfig(n_resamples=200))
    s = _scores(MOSTLY_ONE, metric="deviation_ref_to_est")
    with pytest.raises(ValueError, match="deviation_ref_to_est.*declared continuous in \\[0, inf\\).*greater_than_chance"):
        gate.binomial_greater(s, 0.5, name="b", scale=SECONDS)
    with pytest.raises(ValueError, match="deviation_ref_to_est.*declared continuous.*paired_greater"):
        gate.mcnemar_greater(s, _scores(MOSTLY_ONE[::-1], metric="deviation_ref_to_est"), name="m", scale=SECONDS)


class _Seconds(Protocol):
    """A protocol with one metric in seconds (higher is better) whose items all score 0 s or 1 s."""

    name = "seconds-demo"
    headline = "lead_s"
    model, source = "demo", "demo.jsonl"

    @property
    def conditions(self):
        return ("correct",)

    @property
    def metrics(self):
        return ("lead_s",)

    def scores(self, metric, condition="correct"):
        return _scores(MOSTLY_ONE, metric="lead_s")

    def metric_info(self, metric):
        return MetricInfo("lead_s", True, "lead time (s)", scale=SECONDS)

    def chances(self, metric):
        return (Chance("fixed", 0.5, name="half a second"),)


def test_the_chance_gate_on_seconds_uses_no_binomial_test():
    gate = Gate(GateConfig(n_resamples=500))
    r = checks.beats_chance(gate, _Seconds(), "lead_s")
    assert "binomial" not in r.test and "shape=continuous" in r.test
    assert r.scale == "continuous in [0, inf)"


def _every_gate(run, metric) -> list:
    gate = Gate(GateConfig(n_resamples=300))
    out = [checks.beats_chance(gate, run, metric), checks.listens(gate, run, metric),
           checks.parse_rate(gate, run, 0.5)]
    return [r for r in out if r is not None]


@pytest.mark.parametrize("protocol, path", [
    ("choice", "fixtures/choice/dev_midashenglm.jsonl"),
    ("mir", "fixtures/mir/outputs/mullama/mullama_GTZAN.jsonl"),
    ("mir", "fixtures/mir/outputs/ltu/ltu_GS_key.jsonl"),
    ("mir", "fixtures/mir/outputs/mullama/mullama_Guzheng_Tech.jsonl"),
])
def test_every_gate_of_the_embedded_default_passes_the_declared_scale(protocol, path):
    run = load_protocol(protocol, ROOT / path)
    for metric in run.metrics:
        assert run.metric_info(metric).scale is not None, f"{protocol} {path}: {metric} declares no scale"
    results = _every_gate(run, run.headline)
    assert results
    for r in results:
        assert parse(r.scale) is not None, (r.name, r.scale)  # a declared scale, never one read from the values


def test_the_choice_answer_permutation_is_an_expected_accuracy_not_an_outcome():
    run = load_protocol("choice", ROOT / "fixtures/choice/dev_midashenglm.jsonl")
    assert run.scale("accuracy") == BINARY
    assert run.scale("accuracy", "answer permutation") == UNIT
    assert checks.paired_scale(run, "accuracy", "answer permutation") == UNIT
    assert checks.paired_scale(run, "accuracy", "best constant answer") == BINARY


# ------------------------------------------------------------------------------- declarations


def test_every_mir_metric_with_a_unit_declares_its_scale():
    from musiceval.protocols.mir.metrics.beats import METRICS as BEATS
    from musiceval.protocols.mir.metrics.structure import METRICS as STRUCTURE

    assert set(UNITS) | set(BEATS) | set(STRUCTURE) <= set(SCALES)
    assert SCALES["deviation_ref_to_est"] == SCALES["deviation_est_to_ref"] == SECONDS
    assert SCALES["accuracy"] == BINARY and SCALES["wer"].high == math.inf  # WER exceeds 1 with insertions
    assert SCALES["overall_accuracy"] == UNIT  # a share of frames, not an outcome


def test_every_builtin_freeform_metric_declares_its_scale():
    import musiceval.metrics.fense_metric  # noqa: F401  (registers fense)
    from musiceval.metrics.registry import METRICS

    builtin = {name: spec for name, spec in METRICS.items() if spec.fn.__module__.startswith("musiceval.metrics.")}
    assert {"bleu", "cider", "bertscore", "clap_text", "sentence_cosine", "fense"} <= set(builtin)
    assert not [name for name, spec in builtin.items() if spec.scale is None]
    assert METRICS.get("cider").scale == bounded(0, 10)  # CIDEr-D of 2 is no value outside a [0, 1] range


def test_the_judge_declares_one_reply_as_an_outcome_and_several_as_a_share():
    from musiceval.protocols.judge.engine import JUDGING

    assert JUDGING["pointwise"].scale == BINARY and JUDGING["pointwise"].scale.averaged() == UNIT
    assert JUDGING["rubric"].scale == bounded(1, 10)


# ------------------------------------------------------------------------------- the Scale type


def test_scales_transform_as_the_gates_transform_the_values():
    assert BINARY.difference() == bounded(-1, 1) and not BINARY.difference().binary
    assert UNIT.shifted(-0.25) == bounded(-0.25, 0.75)
    assert UNIT.negated() == bounded(-1, 0) and SECONDS.negated() == Scale(high=0.0)
    assert BINARY.join(UNIT) == UNIT and BINARY.join(BINARY) == BINARY
    assert BINARY.averaged() == UNIT
    with pytest.raises(ValueError, match="0/1 outcomes lie in \\[0, 1\\]"):
        Scale(binary=True, low=0, high=2)


@pytest.mark.parametrize("scale", [BINARY, UNIT, SECONDS, UNBOUNDED, bounded(-1, 1), Scale(high=1.0), bounded(1, 10)])
def test_a_recorded_scale_reads_back(scale):
    assert parse(scale.label) == scale


def test_undeclared_scales_are_read_from_the_values_and_say_so():
    assert from_values(np.array([0.0, 1.0])) == BINARY
    assert from_values(np.array([0.0, 0.5])) == UNIT
    assert from_values(np.array([0.0, 2.0])) == UNBOUNDED
    assert describe(None, np.array([0.0, 1.0])) == "binary (0/1 outcomes), read from the values (the metric declares no scale)"
    assert describe(SECONDS) == "continuous in [0, inf)"


def test_compare_reads_the_declared_scale_back_and_averages_repeats():
    from musiceval.results.comparison import ScoreSet

    ids = ["a#r0", "a#r1", "b#r0", "b#r1"]
    s = ScoreSet(ItemScores("accuracy", ids, [1.0, 0.0, 1.0, 1.0]), True, BINARY)
    means = s.item_means()
    assert means.scale == UNIT and sorted(means.scores.values.tolist()) == [0.5, 1.0]


def test_compare_scores_on_seconds_decides_on_a_continuous_interval():
    from musiceval.stats.regression import compare_scores

    new = _scores(MOSTLY_ONE, metric="deviation")
    old = _scores(np.array([1.0] * 20 + [0.0] * 10), metric="deviation")
    c = compare_scores(new, old, margin=0.1, name="r", higher_is_better=True, scale=SECONDS)
    assert "Tango" not in c.non_inferior.test and c.non_inferior.scale == "continuous in [0, inf)"
    assert "points" not in c.non_inferior.detail  # seconds are said in seconds, not in points of a [0, 1] metric


def test_musiceval_score_prints_the_interval_on_the_declared_scale():
    from musiceval.commands.summary import summarize
    from musiceval.protocols.choice import ChoiceProtocol
    from musiceval.protocols.scoring import ScoreRequest

    report = ChoiceProtocol.score(ScoreRequest(file=str(ROOT / "fixtures/choice/dev_midashenglm.jsonl"), format=None,
                                               options={}))
    assert report.scales["accuracy"] == BINARY
    seconds = {"lead_s": _scores(MOSTLY_ONE, metric="lead_s")}
    declared, _ = summarize("demo", seconds, {}, scales={"lead_s": SECONDS})
    read, _ = summarize("demo", seconds, {})
    assert declared["lead_s"]["high"] > 1.0 and "shape=continuous" in declared["lead_s"]["method"]
    assert read["lead_s"]["high"] <= 1.0 and "Clopper-Pearson" in read["lead_s"]["method"]


def test_a_finding_not_shifted_keeps_the_exact_interval_of_0_1_outcomes():
    """``interval_finding`` with nothing subtracted (the human-baseline reference line) records the
    interval the gates use for the declared accuracy: Clopper-Pearson, not a bound for [0, 1]."""
    values = np.array([1.0] * 3 + [0.0] * 9)
    gate = Gate(GateConfig())
    found = gate.interval_finding(_scores(values, "accuracy"), name="human line", scale=BINARY)
    ci = gate.interval(values, None, name="human line", scale=BINARY)
    assert found.ci == pytest.approx((ci.low, ci.high)) and "Clopper-Pearson" in found.test
    assert 0.05 < ci.low < 0.06 and 0.57 < ci.high < 0.58
    assert BINARY.shifted(0.0) is BINARY and not BINARY.shifted(-0.25).binary


def test_a_control_that_contradicts_the_declaration_names_its_condition_and_the_fix():
    correct = _scores(np.array([1.0, 0.0] * 10), "accuracy")
    moved = _scores(np.full(20, 1 / 3), "accuracy", condition="answer permutation")
    with pytest.raises(ValueError, match=r"accuracy \(answer permutation\): declared binary .* scale\(metric, condition\)"):
        Gate(GateConfig()).paired_greater(correct, moved, name="listens", metric="accuracy", scale=BINARY)
