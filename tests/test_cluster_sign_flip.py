"""Few clusters: the cluster sign-flip (randomization) test and the interval that inverts it.

Paired differences clustered in fewer than ``intervals.SIGN_FLIP_CLUSTERS`` clusters (tracks) are
decided by Fisher's randomization test over cluster totals (docs/regression-gates.md, "Few
clusters"): exact at any cluster count when the cluster totals are symmetric under the null, its
smallest p-value ``2^-C``. The user's case: Guzheng_Tech's parse rate 0.489 -> 1.000 on 10 tracks,
every track improved, was INCONCLUSIVE under the cluster-robust interval ([-7.7, +61.9] points here)
and is decided now.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from musiceval import results, stats
from musiceval.cli import main
from musiceval.gates import Gate, GateConfig
from musiceval.records import ItemScores, Outcome
from musiceval.stats import intervals

# items per track of CMI-Bench Guzheng_Tech (shared/data/cmi-bench/outputs/ltu/ltu_Guzheng_Tech.jsonl:
# 94 answers about 10 audio files) and, per track, the answers the old model left unparsed (48 of 94)
GUZHENG_TRACK_SIZES = (5, 5, 6, 7, 8, 9, 10, 12, 15, 17)
OLD_UNPARSED = (3, 2, 4, 4, 4, 6, 1, 5, 9, 10)


def _guzheng_parse_rates() -> tuple[ItemScores, ItemScores]:
    """(new, old) 0/1 parse outcomes: old parses 46 of 94 (0.489), new all 94; every track improves."""
    old, groups = [], []
    for track, (size, unparsed) in enumerate(zip(GUZHENG_TRACK_SIZES, OLD_UNPARSED)):
        old += [0.0] * unparsed + [1.0] * (size - unparsed)
        groups += [f"Guzheng_Tech/{track}.flac"] * size
    ids = [f"guzheng-{k}" for k in range(len(old))]
    return (ItemScores("parse_rate", ids, np.ones(len(old)), groups=groups, condition="correct"),
            ItemScores("parse_rate", ids, np.array(old), groups=groups, condition="correct"))


def _clustered(rng, clusters: int, mean: float = 0.0, *, low: int = 1, high: int = 9):
    sizes = rng.integers(low, high, size=clusters)
    groups = np.repeat(np.arange(clusters), sizes)
    d = mean + rng.normal(0, 1, clusters)[groups] + rng.normal(0, 1, groups.size)
    return d, [f"t{g}" for g in groups]


def _brute_force_p(d, groups, delta):
    """One-sided sign-flip p-value of ``mean > delta`` by enumerating every sign pattern."""
    sums, sizes = intervals.cluster_sums(np.asarray(d, dtype=float), groups)
    a = sums - sizes * delta
    signs = 1 - 2 * ((np.arange(2 ** a.size)[:, None] >> np.arange(a.size)) & 1)
    return float(np.mean(signs @ a >= a.sum() - 1e-12))


# ----------------------------------------------------------------------------- the user's case


def test_guzheng_parse_rate_gain_on_10_tracks_is_decided_by_the_exact_sign_flip_test():
    new, old = _guzheng_parse_rates()
    assert round(old.mean(), 3) == 0.489 and new.mean() == 1.0
    diff = new.values - old.values
    # before: the CR1 skew-corrected t on 10 cluster units straddles 0 (the report's INCONCLUSIVE)
    before = intervals.skew_t(diff, groups=new.groups)
    assert before.low < 0 < before.high and before.high - before.low > 0.6

    rows = []
    comparison = Gate(GateConfig(), sink=rows.append).regression(
        new, old, margin=0.02, name="Guzheng_Tech parse rate", new_label="v2", old_label="v1",
        protocol="mir/Guzheng_Tech", metric="parse_rate")
    ni, sup = comparison.non_inferior, comparison.superior
    assert comparison.verdict == "superior"
    assert ni.outcome is Outcome.PASS and sup.outcome is Outcome.PASS
    for r in (ni, sup):
        assert "exact cluster sign-flip (randomization) test over 10 clusters" in r.test
        assert "shape=binary+few-clusters" in r.test
        assert r.estimate == pytest.approx(48 / 94)  # the item mean, as before
        assert 0 < r.ci[0] < r.estimate < r.ci[1] <= 1
        assert r.p_value == pytest.approx(2 / 2**10)  # 1/1024 (every track improved), doubled: alpha/2
    assert "superiority: PASS" in ni.detail
    assert [row["outcome"] for row in rows if row["type"] == "gate"] == ["PASS"]  # recorded as the gate

    pg = Gate(GateConfig()).paired_greater(new, old, name="new parses more than old")
    assert pg.outcome is Outcome.PASS and "exact cluster sign-flip" in pg.test


def test_compare_cli_decides_the_guzheng_gain(tmp_path, capsys):
    """End to end: two results dirs written by the real path, compared by ``musiceval compare``."""
    from tests.test_compare import _fp, write_results

    new, old = _guzheng_parse_rates()
    a = write_results(tmp_path / "v1", {"mir/Guzheng_Tech": [old]}, {"model": "v1", "seed": 0, "provenance": _fp("v1")})
    b = write_results(tmp_path / "v2", {"mir/Guzheng_Tech": [new]}, {"model": "v2", "seed": 0, "provenance": _fp("v2")})
    row = results.compare(a, b, default_margin=0.02).iloc[0]
    assert row.verdict == "superior" and "exact cluster sign-flip (randomization) test over 10 clusters" in row.test
    assert main(["compare", str(a), str(b), "--margin", "0.02", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [r["verdict"] for r in payload["rows"]] == ["superior"]


# ----------------------------------------------------------------------------- the test and its inversion


@pytest.mark.parametrize("clusters", [6, 9, 12])
def test_bounds_are_the_edges_of_the_shifts_the_test_does_not_reject(clusters):
    rng = np.random.default_rng(clusters)
    d, groups = _clustered(rng, clusters, 0.3)
    b = intervals.cluster_sign_flip(d, groups, alpha=0.05, margin=0.1)
    assert b.p_value == pytest.approx(_brute_force_p(d, groups, 0.1))
    assert b.p_value == pytest.approx(stats.sign_flip_test(d - 0.1, groups=groups))  # the repository's sign-flip test
    eps = 1e-9
    # at the bounds the test does not reject at alpha/2; just outside, it does
    assert _brute_force_p(d, groups, b.low) > 0.025 >= _brute_force_p(d, groups, b.low - eps)
    assert _brute_force_p(-d, groups, -b.high) > 0.025 >= _brute_force_p(-d, groups, -b.high - eps)
    assert (b.low > 0.1) == (b.p_value <= 0.025)


def test_the_interval_is_about_the_item_mean_and_shifts_with_the_data():
    rng = np.random.default_rng(1)
    d, groups = _clustered(rng, 10, 0.2, low=1, high=30)  # very unequal clusters
    b = intervals.cluster_sign_flip(d, groups)
    cluster_means = [d[np.array(groups) == g].mean() for g in sorted(set(groups))]
    assert b.low < d.mean() < b.high and not math.isclose(d.mean(), np.mean(cluster_means))
    shifted = intervals.cluster_sign_flip(d + 0.5, groups)
    assert (shifted.low, shifted.high) == pytest.approx((b.low + 0.5, b.high + 0.5))
    order = rng.permutation(d.size)
    again = intervals.cluster_sign_flip(d[order], [groups[k] for k in order])
    assert (again.low, again.high, again.p_value) == (b.low, b.high, b.p_value)  # bit-identical


def test_size_is_exact_for_symmetric_cluster_totals():
    rng = np.random.default_rng(2)
    sims, rejections = 3000, 0
    for _ in range(sims):
        d, groups = _clustered(rng, 8)
        rejections += intervals.cluster_sign_flip(d, groups, margin=0.0).low > 0
    exact = math.floor(0.025 * 2**8) / 2**8  # 6/256: the size of the exact test at alpha/2 = 2.5 %
    assert abs(rejections / sims - exact) <= 3 * math.sqrt(exact * (1 - exact) / sims)


def test_beyond_16_clusters_seeded_monte_carlo_patterns_give_the_same_interval_every_time():
    rng = np.random.default_rng(3)
    d, groups = _clustered(rng, 19, 0.5)
    b = intervals.cluster_sign_flip(d, groups)
    assert "Monte-Carlo cluster sign-flip (randomization) test over 19 clusters" in b.method
    assert intervals.cluster_sign_flip(d, groups) == b
    assert b.low < d.mean() < b.high and (b.low > 0) == (b.p_value <= 0.025)
    exact_ish = intervals.cluster_sign_flip(d, groups, draws=99_999)
    assert exact_ish.low == pytest.approx(b.low, abs=0.05) and exact_ish.high == pytest.approx(b.high, abs=0.05)


def test_too_few_clusters_to_reject_give_the_whole_range():
    rng = np.random.default_rng(4)
    new = (rng.random(30) < 0.9).astype(float)
    old = (rng.random(30) < 0.2).astype(float)
    groups = [f"t{k // 6}" for k in range(30)]  # 5 clusters: smallest p-value 1/32 > alpha/4
    b = intervals.paired_interval(new, old, groups=groups)
    assert (b.low, b.high) == (-1.0, 1.0) and "cannot reject" in b.method and b.shape == "binary+few-clusters"
    unbounded = intervals.cluster_sign_flip(10 * (new - old), groups)
    assert unbounded.low == -math.inf and unbounded.high == math.inf


def test_the_few_cluster_rule_applies_below_the_threshold_only():
    rng = np.random.default_rng(5)
    limit = intervals.SIGN_FLIP_CLUSTERS
    for clusters, expected in ((limit - 1, "+few-clusters"), (limit, "+clustered")):
        groups = [f"t{k // 4}" for k in range(4 * clusters)]
        new, old = (rng.random(4 * clusters) < 0.7).astype(float), (rng.random(4 * clusters) < 0.6).astype(float)
        assert intervals.classify(new, old, groups=groups, paired=True).endswith(expected)
        assert intervals.paired_interval(new, old, groups=groups).shape.endswith(expected)
    # one-sample gates keep their shapes (the rule is about paired differences)
    few = [f"t{k // 4}" for k in range(40)]
    assert intervals.classify(new[:40], groups=few) == "binary+clustered"


def test_errors_name_the_input():
    with pytest.raises(ValueError, match="groups is required"):
        intervals.cluster_sign_flip([0.1, 0.2], None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="groups has 1 labels for 2 values"):
        intervals.cluster_sign_flip([0.1, 0.2], ["a"])
    with pytest.raises(ValueError, match="diff contains NaN"):
        intervals.cluster_sign_flip([0.1, math.nan], ["a", "b"])
    with pytest.raises(ValueError, match="alpha must be in"):
        intervals.cluster_sign_flip([0.1, 0.2], ["a", "b"], alpha=1.5)
