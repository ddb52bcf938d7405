"""``musiceval compare`` of runs that asked each item a different number of times (``--repeats K``;
docs/regression-gates.md, "Runs with different repeats"): refused with the fix named, or, with
``--per-item-mean``, compared by each item's mean over its repeats, paired by item."""
from __future__ import annotations

import numpy as np
import pytest

from musiceval import results
from musiceval.cli import main
from musiceval.data.answers import repeat_id
from musiceval.provenance import fingerprint
from musiceval.records import ItemScores
from musiceval.results.comparison import NotComparable, RepeatsDiffer
from tests.test_compare import write_results

N = 120


def _run(tmp_path, name: str, values: np.ndarray, *, model: str, repeats: int = 1):
    """A choice run: ``values`` is items x repeats (one column: one answer per item)."""
    values = np.asarray(values, dtype=float).reshape(N, -1)
    k = values.shape[1]
    ids = [repeat_id(f"q{i}", r) if repeats > 1 else f"q{i}" for i in range(N) for r in range(k)]
    groups = [f"clip{i // 2}" for i in range(N) for _ in range(k)]
    s = ItemScores("accuracy", ids=ids, values=values.reshape(-1), groups=groups)
    fp = fingerprint(protocols=["choice"], model=model, decoding={"temperature": 0.7 if repeats > 1 else 0.0}, seed=0,
                     repeats=repeats)
    meta = {"model": model, "seed": 0, "provenance": fp, **({"repeats": repeats} if repeats > 1 else {})}
    return write_results(tmp_path / name, {"choice": [s]}, meta)


def test_a_run_of_one_answer_and_a_run_of_five_are_refused_naming_the_fix(tmp_path, capsys):
    rng = np.random.default_rng(0)
    one = _run(tmp_path, "v1", rng.random((N, 1)) < 0.6, model="v1")
    five = _run(tmp_path, "v2", rng.random((N, 5)) < 0.6, model="v2", repeats=5)
    with pytest.raises(RepeatsDiffer) as err:
        results.compare(one, five)
    assert isinstance(err.value, NotComparable)
    message = str(err.value)
    assert "v1 asked every item once, v2 5 times" in message
    assert "ask v1's model again with --repeats 5 at v2's temperature" in message and "--per-item-mean" in message
    assert main(["compare", str(one), str(five)]) == 2
    assert "v1 asked every item once, v2 5 times" in capsys.readouterr().err


def test_per_item_mean_pairs_each_item_with_its_mean_over_the_repeats(tmp_path, capsys):
    rng = np.random.default_rng(1)
    old = (rng.random((N, 1)) < 0.5).astype(float)
    new = (rng.random((N, 3)) < 0.8).astype(float)
    a, b = _run(tmp_path, "v1", old, model="v1"), _run(tmp_path, "v2", new, model="v2", repeats=3)
    table = results.compare(a, b, per_item_mean=True)
    (row,) = table.itertuples()
    assert row.n_paired == N and row.n_unmatched == 0  # q0..q119 against q0..q119, not against q0#r0 ...
    assert row.mean_new == pytest.approx(new.mean(axis=1).mean()) and row.mean_baseline == pytest.approx(old.mean())
    assert row.diff == pytest.approx(new.mean(axis=1).mean() - old.mean())
    assert "v2: each item's mean over its 3 sampled repeats (--per-item-mean)" in table.attrs["notes"]
    assert main(["compare", str(a), str(b), "--per-item-mean"]) == 0
    assert "mean over its 3 sampled repeats" in capsys.readouterr().out


def test_runs_with_the_same_repeats_pair_repeat_by_repeat_without_the_flag(tmp_path):
    rng = np.random.default_rng(2)
    a = _run(tmp_path, "v1", rng.random((N, 3)) < 0.6, model="v1", repeats=3)
    b = _run(tmp_path, "v2", rng.random((N, 3)) < 0.6, model="v2", repeats=3)
    (row,) = results.compare(a, b).itertuples()
    assert row.n_paired == 3 * N and row.n_unmatched == 0
    (mean_row,) = results.compare(a, b, per_item_mean=True).itertuples()
    assert mean_row.n_paired == N and mean_row.diff == pytest.approx(row.diff)  # equal K: the same mean difference


def test_power_against_a_run_with_other_repeats_is_refused_naming_the_fix(tmp_path, capsys):
    rng = np.random.default_rng(3)
    one = _run(tmp_path, "v1", rng.random((N, 1)) < 0.6, model="v1")
    five = _run(tmp_path, "v2", rng.random((N, 5)) < 0.6, model="v2", repeats=5)
    assert main(["power", str(five), "--against", str(one), "--metric", "accuracy", "--drop", "0.05"]) == 2
    err = capsys.readouterr().err
    assert "v2 asked every item 5 time(s), v1 1" in err and "pass --against a run with the same --repeats" in err


def test_the_regression_gates_baseline_refuses_a_run_with_other_repeats_without_offering_a_compare_flag(tmp_path):
    """``[baseline] results`` in a pytest run pairs row by row (evals/regression): a baseline asked
    once against a run asked five times is refused, the fix being the same repeats on both sides."""
    from musiceval.results.comparison import Baseline

    rng = np.random.default_rng(4)
    base = Baseline(_run(tmp_path, "v1", rng.random((N, 1)) < 0.6, model="v1"))
    now = fingerprint(protocols=["choice"], model="v2", decoding={"temperature": 0.7}, seed=0, repeats=5)
    with pytest.raises(RepeatsDiffer) as err:
        base.check(now, label="v2")
    message = str(err.value)
    assert "baseline v1 asked every item once, v2 5 times" in message and "--per-item-mean" not in message
    assert base.check(fingerprint(protocols=["choice"], model="v2", decoding={"temperature": 0.0}, seed=0), "v2") == []
