"""Calibration studies of the whole gate path: answer files built to a known truth, scored by the
protocols and gated, many times, to count how often a gate says PASS when it must not.

- :mod:`.blind`: answer-blind files (a constant answer, the answers moved to other items, the
  tag-frequency ranking ...) must never pass chance or listening (docs/gate-your-model.md, "Chance
  is the strongest answer-blind strategy");
- :mod:`.questions`: answers that ignore the question must fail "the model answers the question".

The intervals' own coverage, sample by sample, is :mod:`musiceval.stats.calibration`. Used by
``benchmarks/bench_calibration.py`` and the tests; not by a run.
"""
