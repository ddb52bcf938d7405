"""Intervals of proportions stay in [0, 1] and never have zero width (Bowyer et al. 2025): a parse
rate of 39 of 39 is not known to be exactly 1, and a clustered 0/1 rate cannot exceed 1."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st
from scipy.stats import beta

from musiceval.stats import intervals
from musiceval.cli import main
from musiceval.gates import Gate, GateConfig
from musiceval.records import ItemScores, Outcome


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=1, max_size=300), st.integers(1, 40), st.booleans())
def test_a_proportion_interval_is_inside_0_1_with_positive_width(values, cluster_size, clustered):
    x = np.asarray(values, dtype=float)
    groups = [str(k // cluster_size) for k in range(x.size)] if clustered else None
    b = intervals.one_sample_interval(x, groups=groups)
    assert 0.0 <= b.low <= x.mean() <= b.high <= 1.0 and b.high - b.low > 0


def test_unclustered_it_is_the_exact_clopper_pearson_interval():
    b = intervals.one_sample_interval(np.ones(39))
    assert b.low == beta.ppf(0.025, 39, 1) and b.high == 1.0  # 0.9097...
    k, n = 30, 50
    b = intervals.one_sample_interval(np.array([1.0] * k + [0.0] * (n - k)))
    assert (b.low, b.high) == (beta.ppf(0.025, k, n - k + 1), beta.ppf(0.975, k + 1, n - k))


def test_clustering_widens_the_interval_through_the_effective_sample_size():
    x = np.array([1.0] * 60 + [0.0] * 40)
    together = [str(k // 10) for k in range(100)]  # ten tracks, each all right or all wrong
    iid, clustered = intervals.one_sample_interval(x), intervals.one_sample_interval(x, groups=together)
    assert clustered.high - clustered.low > iid.high - iid.low and "effective sample size" in clustered.method


def test_a_parse_rate_of_39_of_39_can_still_fail_a_threshold_it_cannot_prove():
    gate = Gate(GateConfig())
    ones = ItemScores("parse_rate", [str(k) for k in range(39)], np.ones(39))
    assert gate.at_least(ones, 0.95, name="ifr").outcome is Outcome.INCONCLUSIVE  # [0.910, 1]: not yet above 0.95
    assert gate.at_least(ones, 0.90, name="ifr").outcome is Outcome.PASS


def test_the_cli_prints_intervals_inside_0_1(tmp_path, capsys):
    import json
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "fixtures" / "choice" / "dev_midashenglm.jsonl"
    path = tmp_path / "c39.jsonl"
    path.write_text("".join(src.read_text(encoding="utf-8").splitlines(keepends=True)[:39]), encoding="utf-8")
    for file in (src, path):
        assert main(["score", "choice", str(file), "--json"]) == 0
        for low, high in json.loads(capsys.readouterr().out)["intervals"].values():
            assert 0 <= low < high <= 1
