"""The declared model's answers judged against the baseline's (docs/judge.md): where the suite
config declares the previous release's answer files (``[[baseline.answers]]``), the judge reads each
item's two answers side by side, in both seats, and the model's share of wins (ties half, a tie
where the seats disagree) must not fall more than ``[judge] pairwise_margin`` below 1/2. This sits
beside "not worse than the baseline" (each answer judged on its own, :mod:`musiceval.evals.regression`):
two judged answers compared directly is the comparison judged benchmarks report.
"""
from __future__ import annotations

from musiceval.stats.scales import UNIT

#: the tests and fixtures this module contributes (``musiceval.evals.release_gates`` gathers them)
__all__ = ["test_judged_side_by_side_with_the_baseline"]
PROTOCOL = "judge"


def test_judged_side_by_side_with_the_baseline(run, gate, baseline, thresholds):
    if baseline is None or not baseline.has_answers:
        gate.skip(f"{run.model} {run.source}: judging side by side needs the previous release's answers: declare "
                  "[baseline] name with [[baseline.answers]] (a results folder holds scores, not answers)",
                  applicable=False)
    other = baseline.run_for(PROTOCOL, run.source, run.items_sha256)
    if other is None:
        gate.skip(f"{run.model} {run.source}: the baseline {baseline.label} has no judged source {run.source!r}",
                  applicable=False)
    wins = run.against(other)
    bar = 0.5 - float(thresholds[PROTOCOL]["pairwise_margin"])
    gate.at_least(wins, bar, name=f"{run.model} {run.source}: judged side by side with {baseline.label}, both seats: "
                                  f"wins (ties half) at least {bar:g}", protocol=PROTOCOL, metric="wins",
                  scale=UNIT)  # per item: win 1, tie 1/2, loss 0, averaged over both seats
