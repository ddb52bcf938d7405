"""The generic checks on a small Protocol built in the test: chance, "the model listens", parse rate,
and the suite config's promotion and demotion of checks."""
from __future__ import annotations

import numpy as np
import pytest

from musiceval.gates import Gate, GateConfig
from musiceval.protocols.base import PARSE_RATE, Chance, MetricInfo, Protocol
from musiceval.records import GateResult, ItemScores, Outcome
from musiceval.protocols import checks
from musiceval.keys import CheckRule


class TableProtocol(Protocol):
    """Per-item values given directly: ``values[condition][metric] -> array``."""

    name = "demo"
    headline = "accuracy"

    def __init__(self, values, *, groups=None, chances=(), lower_is_better=()):
        self.values = values
        self.groups = groups
        self._chances = chances
        self.lower = set(lower_is_better)
        self.model, self.source = "M", "file"

    @property
    def conditions(self):
        return tuple(self.values)

    @property
    def metrics(self):
        return tuple(self.values["correct"])

    def scores(self, metric, condition="correct"):
        v = np.asarray(self.values[condition][metric], dtype=float)
        ids = [str(i) for i in range(v.size)]
        return ItemScores(metric, ids, v, groups=self.groups, condition=condition)

    def chances(self, metric):
        return self._chances if metric == "accuracy" else ()

    def metric_info(self, metric):
        return MetricInfo(metric, higher_is_better=metric not in self.lower)


def _gate(rules=None):
    rows = []
    g = Gate(GateConfig(n_resamples=2000, seed=1), sink=rows.append)
    if rules:
        g.rule_for = lambda check: next((r for p, r in rules.items() if check.startswith(p)), None)
    return g, rows


def _binary(p, n=300, seed=0):
    return (np.random.default_rng(seed).random(n) < p).astype(float)


def test_a_model_whose_answers_ignore_the_audio_fails_listens():
    acc = _binary(0.6)
    run = TableProtocol({"correct": {"accuracy": acc}, "noise": {"accuracy": acc.copy()}, "text_only": {"accuracy": acc.copy()}})
    gate, rows = _gate()
    result = checks.listens(gate, run)
    assert result.outcome is Outcome.FAIL and result.estimate == 0.0
    assert "score identically on every one of the 300 items" in result.detail and result.test.startswith("exact")
    assert rows[-1]["check"] == "demo/listens/M/file/accuracy" and rows[-1]["model"] == "M"


def test_a_listening_model_passes_against_its_best_control():
    correct, noise, random = _binary(0.7, seed=1), _binary(0.3, seed=2), _binary(0.4, seed=3)
    run = TableProtocol({"correct": {"accuracy": correct}, "noise": {"accuracy": noise}, "random": {"accuracy": random}})
    gate, _ = _gate()
    result = checks.listens(gate, run)
    assert result.outcome is Outcome.PASS
    assert "random" in result.name.split("beats")[1].split("(")[0]  # the best (hardest) control
    assert result.estimate == pytest.approx(correct.mean() - random.mean())


def test_no_controls_means_no_listens_gate():
    run = TableProtocol({"correct": {"accuracy": _binary(0.5)}})
    assert checks.listens(_gate()[0], run) is None


def test_a_strategy_against_a_rate_is_compared_by_the_exact_binomial_for_01_outcomes():
    run = TableProtocol({"correct": {"accuracy": _binary(0.45)}}, chances=(Chance("fixed", 0.25, name="uniform chance 1/4"),))
    result = checks.compare_with_chance(_gate()[0], run, "accuracy", run.chances("accuracy")[0])
    assert result.outcome is Outcome.PASS and "exact binomial" in result.test
    assert result.name == "M file accuracy beats uniform chance 1/4"


def test_strategies_against_a_permutation_null_and_a_paired_baseline():
    acc = _binary(0.5)
    null = np.full(200, 0.2)
    baseline = ItemScores("accuracy", [str(i) for i in range(acc.size)], np.full(acc.size, 0.6))
    run = TableProtocol({"correct": {"accuracy": acc}},
                        chances=(Chance("permutation", 0.2, name="permutation chance", null=null),
                                 Chance("baseline", 0.6, name="majority-class baseline", scores=baseline)))
    perm, base = (checks.compare_with_chance(_gate()[0], run, "accuracy", c) for c in run.chances("accuracy"))
    assert perm.outcome is Outcome.PASS and "permutation" in perm.test
    assert base.outcome is Outcome.FAIL and base.estimate == pytest.approx(acc.mean() - 0.6)


def test_lower_is_better_metrics_are_compared_the_other_way_round():
    wer = np.random.default_rng(0).uniform(0.2, 0.4, 100)
    baseline = ItemScores("wer", [str(i) for i in range(100)], np.ones(100))
    run = TableProtocol({"correct": {"wer": wer}}, lower_is_better=("wer",))
    result = checks.beats_chance(_gate()[0], run, "wer", [Chance("baseline", 1.0, name="empty transcript", scores=baseline)])
    assert result.outcome is Outcome.PASS and result.estimate == pytest.approx(1.0 - wer.mean())
    assert result.name == "M file wer beats the strongest answer-blind strategy (empty transcript)"


def _three_strategies(acc, base_value):
    ids = [str(i) for i in range(acc.size)]
    return (Chance("fixed", 0.25, name="uniform chance 1/4"),
            Chance("permutation", 0.2, name="permutation chance", null=np.full(200, 0.2)),
            Chance("baseline", base_value, name="best constant answer", scores=ItemScores("accuracy", ids, np.full(acc.size, base_value))))


def test_the_chance_gate_is_one_gate_that_passes_only_when_every_strategy_is_beaten():
    """Intersection-union (Berger 1982): one gate, the least favourable comparison's numbers, each
    strategy listed with its value and how it came out, its check id without a strategy suffix."""
    acc = _binary(0.5)
    run = TableProtocol({"correct": {"accuracy": acc}}, chances=_three_strategies(acc, 0.6))
    gate, rows = _gate()
    result = checks.beats_chance(gate, run, "accuracy")
    assert [r["type"] for r in rows].count("gate") == 1 and len(gate.results) == 1
    assert result.outcome is Outcome.FAIL and result.check == "demo/beats_chance/M/file/accuracy"
    assert result.name == "M file accuracy beats the strongest answer-blind strategy (best constant answer)"
    assert result.estimate == pytest.approx(acc.mean() - 0.6) and "intersection-union" in result.test
    assert result.detail.startswith("uniform chance 1/4: 0.25, beaten · permutation chance: 0.2, beaten · "
                                    "best constant answer: 0.6, not beaten; accuracy=")
    assert "PASS" not in result.detail
    # every strategy beaten: PASS, with the numbers of the hardest one (the lowest lower bound)
    run = TableProtocol({"correct": {"accuracy": acc}}, chances=_three_strategies(acc, 0.3))
    result = checks.beats_chance(_gate()[0], run, "accuracy")
    alone = [checks.compare_with_chance(_gate()[0], run, "accuracy", c) for c in run.chances("accuracy")]
    assert result.outcome is Outcome.PASS and all(r.outcome is Outcome.PASS for r in alone)
    hardest = min(alone, key=lambda r: r.ci[0] - r.bar)
    assert result.ci == hardest.ci and result.p_value == hardest.p_value
    assert checks.beats_chance(_gate()[0], TableProtocol({"correct": {"accuracy": acc}}), "accuracy") is None


def test_an_undecided_strategy_makes_the_gate_inconclusive_and_a_failed_one_fails_it():
    ok, undecided, failed = (GateResult(n, o, 0.1, (lo, 0.2), None, 100, 0.0, "t", bar=0.0) for n, o, lo in (
        ("a", Outcome.PASS, 0.05), ("b", Outcome.INCONCLUSIVE, -0.01), ("c", Outcome.FAIL, -0.3)))
    assert checks.intersection_union([ok, ok]) is Outcome.PASS
    assert checks.intersection_union([ok, undecided]) is Outcome.INCONCLUSIVE
    assert checks.intersection_union([undecided, failed, ok]) is Outcome.FAIL
    assert checks.binding([ok, undecided, failed]) == 2 and checks.binding([ok, undecided]) == 1
    with pytest.raises(ValueError, match="at least one"):
        checks.intersection_union([])


def test_a_config_rule_with_a_margin_applies_to_every_strategy_of_the_one_gate():
    acc = _binary(0.5)
    run = TableProtocol({"correct": {"accuracy": acc}}, chances=_three_strategies(acc, 0.3))
    gate, rows = _gate({"demo/beats_chance/M/file/accuracy": CheckRule("demo/beats_chance/*", gate=False, margin=0.1,
                                                                       reason="a demo")})
    result = checks.beats_chance(gate, run, "accuracy")
    assert result.outcome is Outcome.FINDING and result.name.endswith(" by 0.1")
    assert "; a demo" in result.detail and rows[-1]["role"] == "finding"


def test_parse_rate_gate_and_demotion_by_a_config_rule():
    rate = np.r_[np.ones(95), np.zeros(5)]
    run = TableProtocol({"correct": {"accuracy": _binary(0.5), PARSE_RATE: rate}})
    gate, rows = _gate({"demo/parse_rate/": CheckRule("demo/parse_rate/*", gate=False, reason="demo model")})
    result = checks.parse_rate(gate, run, 0.99)
    assert result.outcome is Outcome.FINDING and "would be FAIL as a gate; demo model" in result.detail
    assert rows[-1]["role"] == "finding" and "demo model" in rows[-1]["role_reason"]


def test_a_finding_by_default_is_promoted_to_a_gate_with_its_margin():
    correct, random = _binary(0.8, seed=4), _binary(0.2, seed=5)
    run = TableProtocol({"correct": {"accuracy": correct}, "random": {"accuracy": random}})
    gate, rows = _gate({"demo/correct_beats_random/": CheckRule("x", gate=True, margin=0.1)})
    g = checks.bind(gate, run, "correct_beats_random", "accuracy", default_role="finding")
    assert g.role == "gate" and g.margin(0.0) == 0.1
    result = checks.correct_beats(gate, run, "accuracy", "random", check="correct_beats_random")
    assert result.outcome is Outcome.PASS and result.threshold == 0.1 and rows[-1]["role"] == "gate"


def test_control_means_cover_correct_and_each_control():
    run = TableProtocol({"correct": {"accuracy": np.ones(10)}, "noise": {"accuracy": np.zeros(10)}})
    assert checks.control_means(run, "accuracy") == {"correct": 1.0, "noise": 0.0}
