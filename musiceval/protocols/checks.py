"""The generic checks every protocol gets, and a gate bound to one check of one model.

A :class:`CheckGate` is a :class:`~musiceval.gates.Gate` that knows what it is about: its check
id (``<protocol>/<check>/<model>/<source>/<metric>[/<what>]``), the model under test, the metric's
units and direction, and whether the suite config makes it a release gate or a finding. A gate
turned into a finding keeps its estimate and interval; the report says which is which and why.

The checks:

- :func:`beats_chance`: ONE gate per metric, "beats the strongest answer-blind strategy": the
  metric against every chance level of the protocol (exact binomial for 0/1 outcomes against a
  fixed rate; a permutation null; a constant answer, an answer permutation or a trivial baseline
  paired by item; :func:`compare_with_chance`), combined by the intersection-union test (PASS only
  when every comparison PASSes; Berger 1982);
- :func:`listens`: "the model listens": Correct against the best control condition (random audio,
  white noise, text only, silence), or, when the answers hold none, against the same answers
  moved to other items (the answer permutation), paired by item and clustered by track; its
  estimate is the audio-dependence score. When Correct and the control score identically on every
  item (an adapter that drops the audio) the gate FAILs: the answers provably do not depend on it;
- :func:`answers_the_question`: "the model answers the question": Correct against the same answers
  moved to other questions about the same clip (the question control), paired by item and
  clustered by clip, wherever a benchmark asks several questions about one clip;
- :func:`parse_rate`: the share of answers the protocol's parser could read (IFR, generalised);
- :func:`correct_beats`: Correct against one other condition on one metric.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from musiceval.gates import Gate
from musiceval.keys import CheckRule
from musiceval.protocols.base import PARSE_RATE, Chance, Protocol
from musiceval.records import GateResult, ItemScores, Outcome
from musiceval.stats.scales import Scale, from_values

_DECIDED = (Outcome.PASS, Outcome.FAIL, Outcome.INCONCLUSIVE)


def check_id(protocol: str, check: str, model: str, source: str, metric: str = "", what: str = "") -> str:
    return "/".join(p for p in (protocol, check, model, source, metric, what) if p)


class CheckGate(Gate):
    """A gate bound to one check; shares its parent's config, sink, results and failure handling."""

    def __init__(self, parent: Gate, *, check: str, model: str = "", source: str = "", protocol: str = "",
                 default_role: str = "gate", unit: str = "", higher_is_better: bool = True,
                 rule: CheckRule | None = None, scale: Scale | None = None, metric: str = ""):
        """``scale`` and ``metric``: the bound metric's declared scale, recorded with its per-item
        scores (``musiceval compare`` reads it back and picks the same interval as the gate)."""
        self.check = check
        self.rule = rule
        self.default_role = default_role
        self.role = ("gate" if rule.gate else "finding") if rule is not None and rule.gate is not None else default_role
        extra = {"check": check, "model": model, "source": source, "role": self.role, "unit": unit,
                 "higher_is_better": higher_is_better}
        if self.role != default_role:
            extra["role_reason"] = f"{'promoted to a gate' if self.role == 'gate' else 'a finding'} by the suite " \
                                   f"config ([checks.\"{rule.pattern}\"])" + (f": {rule.reason}" if rule.reason else "")
        parent_sink = parent.sink

        def sink(row: dict[str, Any]) -> None:
            if row.get("type") == "gate":
                row = {**row, **extra}
            elif row.get("type") == "scores":  # per-item scores: joinable with a later run's by source
                row = {**row, "model": model, "source": source, "check": check, "higher_is_better": higher_is_better}
                if scale is not None and row.get("metric") == metric:  # musiceval compare reads the declaration back
                    row["scale"] = scale.label
            parent_sink(row)

        config = replace(parent.config, protocol=protocol or parent.config.protocol)
        super().__init__(config, sink=sink, on_result=parent.on_result, nodeid=parent.nodeid)
        self.results = parent.results

    def margin(self, default: float = 0.0) -> float:
        """The configured margin: a ``[checks]`` rule's, else ``default`` (the protocol's)."""
        return self.rule.margin if self.rule is not None and self.rule.margin is not None else float(default)

    #: set by :func:`census_at_least`: the scores cover every item there is, so the mean is exact
    census = False
    #: appended to the detail of the result (what the check left out, and why)
    note = ""

    def _conclude(self, result: GateResult, inputs=()) -> GateResult:
        result = replace(result, check=self.check)
        if self.note:
            result = replace(result, detail=f"{result.detail}; {self.note}".lstrip("; "))
        if self.census and result.outcome is not Outcome.FINDING:
            exact = Outcome.PASS if result.estimate >= result.threshold else Outcome.FAIL
            result = replace(result, outcome=exact, ci=(result.estimate, result.estimate), p_value=None,
                             test="census: every item counted, no sampling uncertainty")
        if self.role == "finding" and result.outcome in _DECIDED:
            why = (self.rule.reason if self.rule is not None and self.rule.gate is False and self.rule.reason
                   else "a finding by design: recorded with its interval, never a release condition")
            result = replace(result, outcome=Outcome.FINDING,
                             detail=f"{result.detail}; would be {result.outcome.value} as a gate; {why}".lstrip("; "))
        return super()._conclude(result, inputs)


def bind(gate: Gate, run: Protocol, check: str, metric: str = "", what: str = "", *,
         default_role: str | None = None, rules: Callable[[str], CheckRule | None] | None = None) -> CheckGate:
    """A :class:`CheckGate` for ``check`` of ``run`` on ``metric`` (rules from the suite config)."""
    info = run.metric_info(metric) if metric else None
    cid = check_id(run.name, check, run.model, run.source, metric, what)
    lookup = rules or getattr(gate, "rule_for", None)
    return CheckGate(gate, check=cid, model=run.model, source=run.source, protocol=run.name,
                     default_role=default_role or (info.role if info else "gate"),
                     unit=info.unit if info else "", higher_is_better=info.higher_is_better if info else True,
                     rule=lookup(cid) if lookup else None, scale=info.scale if info else None, metric=metric)


def paired_scale(run: Protocol, metric: str, other: str, condition: str = "correct") -> Scale | None:
    """The scale two conditions of ``metric`` are compared on: the join of each condition's
    (:meth:`~musiceval.protocols.base.Protocol.scale`), None when either is not declared."""
    mine, theirs = run.scale(metric, condition), run.scale(metric, other)
    return mine.join(theirs) if mine is not None and theirs is not None else None


def compare_with_chance(g: Gate, run: Protocol, metric: str, chance: Chance, *, margin: float = 0.0) -> GateResult:
    """One answer-blind strategy's comparison, decided on ``g``: ``metric`` on Correct beats
    ``chance`` by ``margin`` (the metric's units). The statistic follows the strategy's kind: an
    exact binomial test for 0/1 outcomes against a fixed rate (else the one-sample interval), the
    permutation null, or a paired comparison with a baseline's per-item scores. Whether the metric
    gives 0/1 outcomes is its declaration (:attr:`~musiceval.protocols.base.MetricInfo.scale`, passed
    to every comparison), never its values: seconds that happen to be 0 or 1 on every item get no
    binomial test.
    :func:`beats_chance` runs one per strategy on a gate that records nothing and combines them."""
    scores = run.scores(metric, "correct")
    info = run.metric_info(metric)
    scale = run.scale(metric, "correct")
    name = f"{run.model} {run.source} {metric} beats {chance.name}" + (f" by {margin:g}" if margin else "")
    if chance.kind == "baseline":
        base = chance.scores
        if base is None:
            raise ValueError(f"{run.name}: chance {chance.name!r} of kind 'baseline' carries no per-item scores")
        a, b = (scores, base) if info.higher_is_better else (base, scores)
        return g.paired_greater(a, b, name=name, margin=margin, protocol=run.name, metric=metric,
                                scale=paired_scale(run, metric, base.condition))
    if chance.kind == "permutation":
        null = np.asarray(chance.null, dtype=float) + margin
        return g.beats_permutation_null(scores, null, name=name, protocol=run.name, metric=metric, scale=scale)
    level = chance.value + margin if info.higher_is_better else chance.value - margin
    # a protocol's metric without a declared scale (a plugin's): read from the values, and the result says so
    binary = scale.binary if scale is not None else from_values(scores.values).binary
    if binary and info.higher_is_better and 0 < level < 1:
        return g.binomial_greater(scores, level, name=name, protocol=run.name, metric=metric, scale=scale)
    if not info.higher_is_better:
        flipped = replace(scores, values=-scores.values)
        return g.greater_than_chance(flipped, -level, name=name, protocol=run.name, metric=metric,
                                     scale=scale.negated() if scale is not None else None)
    return g.greater_than_chance(scores, level, name=name, protocol=run.name, metric=metric, scale=scale)


#: how a strategy's comparison reads in the chance gate's detail (never the gate words PASS / FAIL:
#: only the one gate says those, so a file that did not listen shows no PASS anywhere)
COMPARISON_WORDS = {Outcome.PASS: "beaten", Outcome.FAIL: "not beaten", Outcome.INCONCLUSIVE: "undecided"}
#: outcomes from least to most favourable: the intersection-union test is as good as its worst comparison
_LEAST_FAVOURABLE_FIRST = {Outcome.FAIL: 0, Outcome.INCONCLUSIVE: 1, Outcome.PASS: 2}


def intersection_union(results: list[GateResult]) -> Outcome:
    """The intersection-union test of "beats every strategy" (Berger 1982, "Multiparameter
    hypothesis testing and acceptance sampling", Technometrics 24(4)): PASS only when every
    comparison PASSes at level alpha (then the whole claim holds at level alpha, with no
    multiplicity correction), FAIL when any FAILs, INCONCLUSIVE otherwise."""
    if not results:
        raise ValueError("intersection_union: no comparisons; give at least one strategy's result")
    outcomes = {r.outcome for r in results}
    if Outcome.FAIL in outcomes:
        return Outcome.FAIL
    return Outcome.PASS if outcomes == {Outcome.PASS} else Outcome.INCONCLUSIVE


def binding(results: list[GateResult]) -> int:
    """The index of the least favourable comparison: the worst outcome, then the lowest lower
    bound above its bar (an undefined bound counts lowest), then the largest p-value."""
    def key(k: int):
        r = results[k]
        room = r.ci[0] - (r.bar if r.bar is not None else 0.0)
        return (_LEAST_FAVOURABLE_FIRST.get(r.outcome, 0), room if math.isfinite(room) else -math.inf,
                -(r.p_value if r.p_value is not None else 1.0))
    return min(range(len(results)), key=key)


def beats_chance(gate: Gate, run: Protocol, metric: str, chances: tuple[Chance, ...] | list[Chance] | None = None, *,
                 margin: float = 0.0) -> GateResult | None:
    """ONE gate: ``metric`` on Correct beats the strongest answer-blind strategy (docs/gate-your-model.md, "What
    the verdict means"), i.e. every one of ``chances`` (default ``run.chances(metric)``; None when there is
    none).

    Each strategy is decided as :func:`compare_with_chance` decides it, on a gate that records
    nothing; the gate is their intersection-union test (:func:`intersection_union`, Berger 1982:
    valid at level alpha without multiplicity correction), with the estimate, interval and p-value of
    the least favourable comparison (:func:`binding`), named after it, and a detail that lists every
    strategy with its value and how its comparison came out (:data:`COMPARISON_WORDS`). The per-item
    scores of the model and of every strategy go to the sink, so ``musiceval compare`` can use them.
    Check id ``<protocol>/beats_chance/<model>/<source>/<metric>``.
    """
    chances = tuple(run.chances(metric) if chances is None else chances)
    if not chances:
        return None
    g = bind(gate, run, "beats_chance", metric)
    margin = g.margin(margin)
    rows: list[dict[str, Any]] = []
    quiet = Gate(g.config, sink=rows.append, nodeid=g.nodeid)  # decides each comparison, records nothing
    results = [compare_with_chance(quiet, run, metric, c, margin=margin) for c in chances]
    worst = binding(results)
    name = (f"{run.model} {run.source} {metric} beats the strongest answer-blind strategy ({chances[worst].name})"
            + (f" by {margin:g}" if margin else ""))
    listed = " · ".join(f"{c.name}: {c.value:.4g}, {COMPARISON_WORDS.get(r.outcome, r.outcome.value.lower())}"
                        for c, r in zip(chances, results))
    combined = replace(
        results[worst], name=name, outcome=intersection_union(results),
        test=f"{results[worst].test}; intersection-union test over {len(chances)} strategies (Berger 1982)",
        detail=f"{listed}; {metric}={run.scores(metric, 'correct').mean():.4g}; least favourable: "
               f"{chances[worst].name} ({results[worst].detail})")
    # the model's per-item scores (as scored, never a comparison's sign-flipped copy) and every paired
    # strategy's, once each, under the one gate
    g.record_scores(run.scores(metric, "correct"), gate=name, protocol=run.name)
    seen = {"correct"}
    for row in rows:
        if row.get("type") == "scores" and row.get("condition") not in seen:
            seen.add(row.get("condition"))
            g.sink({**row, "gate": name})
    return g._conclude(combined)


def _describe(run: Protocol, condition: str) -> str:
    return f"{condition} (answer permutation: another clip's answer to the same prompt)" if condition in run.derived \
        else condition


def control_means(run: Protocol, metric: str) -> dict[str, float]:
    """Mean of ``metric`` under Correct and each control (recorded or derived), and under the
    answer permutation when no control was recorded."""
    out = {"correct": run.scores(metric, "correct").mean()}
    for control in run.controls():
        out[_describe(run, control)] = run.scores(metric, control).mean()
    if not run.recorded_controls():
        permuted = run.answer_permutation(metric)
        if permuted is not None and "random" not in run.derived:
            out["answer permutation"] = permuted.mean()
    return out


def listens(gate: Gate, run: Protocol, metric: str | None = None, *, margin: float = 0.0) -> GateResult | None:
    """"The model listens": ``metric`` (default the headline) on Correct beats the best control,
    paired by item.

    With controls (random audio, white noise, text only, silence; the derived Random of answers to
    a shared prompt counts too) the best control is the one whose mean is closest to Correct's from
    below (the hardest comparison). Without any, the evidence is the answer permutation
    (:meth:`~musiceval.protocols.base.Protocol.answer_permutation`: the same answers moved to other
    items), and the gate is named so. Answers that score the same as their control on every item
    FAIL exactly (:meth:`musiceval.gates.Gate.paired_greater`). Returns None when the protocol has
    neither.
    """
    metric = metric or run.headline
    info = run.metric_info(metric)
    sign = 1.0 if info.higher_is_better else -1.0
    correct = run.scores(metric, "correct")
    controls = run.controls()
    if controls:
        best = max(controls, key=lambda c: sign * run.scores(metric, c).mean() if run.scores(metric, c).n else -math.inf)
        other = run.scores(metric, best)
        against = _describe(run, best) + (f" (the best of {', '.join(controls)})" if len(controls) > 1 else "")
    else:
        permuted = run.answer_permutation(metric)
        if permuted is None:
            return None
        other, against = permuted, "the same answers moved to other items (answer permutation: no control recorded)"
    g = bind(gate, run, "listens", metric, default_role="gate")
    margin = g.margin(margin)
    correct = without_excluded(run, correct, other.condition)
    a, b = (correct, other) if info.higher_is_better else (other, correct)
    name = f"{run.model} {run.source} listens: {metric} Correct beats {against}"
    return g.paired_greater(a, b, name=name, margin=margin, protocol=run.name, metric=metric,
                            scale=paired_scale(run, metric, other.condition))


def answers_the_question(gate: Gate, run: Protocol, metric: str | None = None, *,
                         margin: float = 0.0) -> GateResult | None:
    """"The model answers the question": ``metric`` (default the headline) on Correct beats the
    same answers moved to other questions about the same clip, paired by item and clustered by
    clip (docs/gate-your-model.md, "What the verdict means": answering the question is tested wherever a benchmark
    asks several questions about one clip).

    The moved answers are :meth:`~musiceval.protocols.base.Protocol.question_permutation` (a seeded
    derangement within each clip, scored against each item with the protocol's own scorer); the
    statistics are those of :func:`listens` (:meth:`musiceval.gates.Gate.paired_greater`), so
    answers that fit every question about their clip equally well (a description of the clip,
    answers shifted to the neighbouring question) FAIL or stay INCONCLUSIVE, never PASS. Items
    whose clip has no other question are left out of the comparison and counted in the detail.
    Returns None when too few items have a partner (the gate is not applicable).
    """
    metric = metric or run.headline
    moved = run.question_permutation(metric)
    if moved is None:
        return None
    info = run.metric_info(metric)
    partners = run.question_partners()
    g = bind(gate, run, "answers_the_question", metric, default_role="gate")
    margin = g.margin(margin)
    g.note = f"question control: {partners.describe()}"
    correct = _only(run.scores(metric, "correct"), set(partners.partner))
    a, b = (correct, moved) if info.higher_is_better else (moved, correct)
    name = (f"{run.model} {run.source} answers the question: {metric} Correct beats the same answers moved to other "
            "questions about the same clip")
    return g.paired_greater(a, b, name=name, margin=margin, protocol=run.name, metric=metric,
                            scale=paired_scale(run, metric, moved.condition))


def _only(scores: ItemScores, ids: set[str]) -> ItemScores:
    """``scores`` (and its failures) on the items in ``ids`` only."""
    keep = [k for k, i in enumerate(scores.ids) if i in ids]
    return ItemScores(scores.metric, [scores.ids[k] for k in keep], scores.values[keep],
                      groups=[scores.groups[k] for k in keep] if scores.groups is not None else None,
                      condition=scores.condition, failures=tuple(f for f in scores.failures if f.item_id in ids))


def parse_rate(gate: Gate, run: Protocol, minimum: float) -> GateResult:
    """The share of answers the protocol's parser could read is at least ``minimum``."""
    g = bind(gate, run, "parse_rate", PARSE_RATE, default_role="gate")
    minimum = g.margin(minimum) if g.rule is not None and g.rule.margin is not None else minimum
    return g.at_least(run.scores(PARSE_RATE, "correct"), minimum,
                      name=f"{run.model} {run.source} parse rate at least {minimum:.0%}", protocol=run.name,
                      metric=PARSE_RATE, scale=run.metric_info(PARSE_RATE).scale)


def without_excluded(run: Protocol, scores: ItemScores, condition: str) -> ItemScores:
    """``scores`` without the items a rule of ``run`` leaves out of ``condition`` (an item with no
    Random partner is out of Correct vs Random): they are counted under the rule, not as unpaired
    failures of the comparison."""
    out = {i for e in run.exclusions() if e.conditions and e.applies_to(condition) for i in e.ids}
    if not out & set(scores.ids):
        return scores
    keep = [k for k, i in enumerate(scores.ids) if i not in out]
    return ItemScores(scores.metric, [scores.ids[k] for k in keep], scores.values[keep],
                      groups=[scores.groups[k] for k in keep] if scores.groups is not None else None,
                      condition=scores.condition, failures=tuple(f for f in scores.failures if f.item_id not in out))


def correct_beats(gate: Gate, run: Protocol, metric: str, other: str, *, check: str, margin: float = 0.0,
                  a: str = "correct") -> GateResult:
    """``metric`` under condition ``a`` beats condition ``other`` (paired; role from the metric)."""
    info = run.metric_info(metric)
    g = bind(gate, run, check, metric)
    margin = g.margin(margin)
    x, y = without_excluded(run, run.scores(metric, a), other), run.scores(metric, other)
    if not info.higher_is_better:
        x, y = y, x
    return g.paired_greater(x, y, name=f"{run.model} {run.source} {metric}: {a} > {other}", margin=margin,
                            protocol=run.name, metric=metric, scale=paired_scale(run, metric, other, a))


def census_at_least(gate: Gate, scores, threshold: float, *, name: str, check: str, protocol: str = "",
                    model: str = "", scale: Scale | None = None) -> GateResult:
    """``mean(scores) >= threshold`` when ``scores`` is a census (every item of a fixed set, such as
    "every instruction was answered"): PASS or FAIL on the exact mean, never a sampling interval
    (``scale``: what one item's value is, checked and recorded)."""
    g = CheckGate(gate, check=check, model=model, protocol=protocol, rule=getattr(gate, "rule_for", lambda c: None)(check))
    g.census = True
    return g.at_least(scores, threshold, name=name, protocol=protocol, scale=scale)


def readable(gate: Gate, run: Protocol, allowed: int) -> GateResult:
    """Every line of the answer file could be read (at most ``allowed`` unreadable lines: torn
    JSON, wrong types). A census, decided exactly; the detail names the first unreadable lines
    (``file:line: reason``)."""
    account = run.accounting
    g = bind(gate, run, "readable", default_role="gate")
    bad = len(account.unreadable)
    where = "; ".join(f"{f.item_id}: {f.reason}" for f in account.unreadable[:5])
    more = f" (+{bad - 5} more)" if bad > 5 else ""
    return g._conclude(GateResult(
        name=f"{run.model} {run.source}: every line of the answer file is readable ({allowed} unreadable allowed)",
        outcome=Outcome.PASS if bad <= allowed else Outcome.FAIL, estimate=float(bad), ci=(float(bad), float(bad)),
        p_value=None, n=account.records, threshold=float(allowed), bar=float(allowed), protocol=run.name,
        metric="unreadable lines", test="census: every line counted, no sampling uncertainty", n_failed=bad,
        detail=(f"{bad} of {account.records} lines unreadable: {where}{more}; fix or regenerate the file, or allow "
                "them with [defaults] max_unreadable" if bad else f"all {account.records} lines read")))


def coverage(gate: Gate, run: Protocol, minimum: float) -> GateResult | None:
    """The answers cover at least ``minimum`` of the benchmark's items (``covers X of N items``); a
    census, decided exactly. None when the benchmark's size is unknown (set ``expected_items``)."""
    account = run.accounting
    if not account.expected:
        return None
    g = bind(gate, run, "coverage", default_role="gate")
    share = min(account.answered, account.expected) / account.expected
    cap = f"; scored the first {account.cap} records (a cap set in the config)" if account.cap else ""
    return g._conclude(GateResult(
        name=f"{run.model} {run.source} covers {account.answered:,} of {account.expected:,} items of "
             f"{account.benchmark or 'the benchmark'} (at least {minimum:.0%})",
        outcome=Outcome.PASS if share >= minimum else Outcome.FAIL, estimate=share, ci=(share, share), p_value=None,
        n=account.expected, threshold=minimum, bar=minimum, protocol=run.name, metric="coverage",
        test="census: every item counted, no sampling uncertainty",
        detail=f"{account.answered:,} of {account.expected:,} items answered ({share:.1%}){cap}"))
