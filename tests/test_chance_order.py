"""Every chance level is invariant to the order of the answer file's lines (property tests).

The same answers in another line order must give the same chance levels, the same per-item
baseline scores and the same gate outcomes: a release verdict cannot depend on how a file was
sorted. Checked for every protocol whose chances come from the answers themselves (multiple
choice, factual, MIR classification, MIR tagging: the tag-frequency ranking, the most common
response and the answer permutation), with hypothesis drawing keys, answers (ties included) and
the line order.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import assume, given, settings, strategies as st

from musiceval.calibration.blind import BENCHMARKS, BlindBenchmark, _tags, answer_set, ranking_embedder
from musiceval.protocols.base import PROTOCOLS, ProtocolSettings


def _reordered(answers, order):
    """The same answers as lines in ``order`` (a record's line index is its new position)."""
    items = [answers.items[k] for k in order]
    items = [replace(it, meta={**it.meta, "index": pos}) if "index" in it.meta else it for pos, it in enumerate(items)]
    return replace(answers, items=items, responses=[answers.responses[k] for k in order])


def _chances(answers, protocol: str, seed: int = 3, options: dict | None = None):
    options = options or ({"vocab": "nsynth", "n_permutations": 50} if protocol == "factual" else {})
    run = PROTOCOLS.get(protocol).from_answers(answers, ProtocolSettings(seed=seed, options=options))
    out = {}
    for c in run.chances(run.headline):
        scores = dict(zip(c.scores.ids, c.scores.values.tolist())) if c.scores is not None else None
        out[c.name] = (c.kind, c.value, None if c.null is None else sorted(c.null.tolist()), scores)
    return out


def _case(protocol: str, classes: int):
    return st.integers(6, 40).flatmap(lambda n: st.tuples(
        st.lists(st.integers(0, classes - 1), min_size=n, max_size=n),
        st.lists(st.integers(0, classes - 1), min_size=n, max_size=n),
        st.permutations(list(range(n))),
    ))


@settings(max_examples=40, deadline=None)
@given(_case("choice", 4))
def test_choice_chances_do_not_move_with_line_order(case):
    keys, answers, order = case
    bench = BlindBenchmark("choice", len(keys), (1, 1, 1, 1), tracks=max(2, len(keys) // 2))
    data = answer_set(bench, keys, answers)
    assert _chances(data, "choice") == _chances(_reordered(data, order), "choice")


@settings(max_examples=25, deadline=None)
@given(_case("factual", 11))
def test_factual_chances_do_not_move_with_line_order(case):
    keys, answers, order = case
    bench = BlindBenchmark("factual", len(keys), (1,) * 11)
    data = answer_set(bench, keys, answers)
    first, second = _chances(data, "factual"), _chances(_reordered(data, order), "factual")
    assert first.keys() == second.keys() == {"permutation chance", "best constant label set"}
    assert first == second


@settings(max_examples=25, deadline=None)
@given(_case("mir", 10))
def test_mir_trivial_baselines_do_not_move_with_line_order(case):
    keys, answers, order = case
    bench = BlindBenchmark("mir", len(keys), (1,) * 10)
    data = answer_set(bench, keys, answers)
    assert _chances(data, "mir") == _chances(_reordered(data, order), "mir")


def test_ties_between_most_frequent_classes_are_broken_by_the_classes_not_the_lines():
    keys = [0, 1] * 10  # two equally frequent classes
    bench = BlindBenchmark("mir", len(keys), (1,) * 10)
    data = answer_set(bench, keys, [2] * len(keys))
    reversed_data = _reordered(data, list(range(len(keys)))[::-1])
    assert _chances(data, "mir") == _chances(reversed_data, "mir")
    assert np.isclose(_chances(data, "mir")["majority-class baseline"][1], 0.5)


TAGGING = next(b for b in BENCHMARKS if b.tagging)
_TAG_SET = st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True).map(tuple)


@settings(max_examples=25, deadline=None)
@given(st.integers(6, 30).flatmap(lambda n: st.tuples(
    st.lists(_TAG_SET, min_size=n, max_size=n), st.lists(_TAG_SET, min_size=n, max_size=n),
    st.permutations(list(range(n))))))
def test_tagging_rankings_do_not_move_with_line_order(case):
    keys, answers, order = case
    assume(len(set(keys)) > 1)  # some tag on some items and not on others: the task's AUC is defined
    data = answer_set(TAGGING, keys, answers)
    options = {"embed": ranking_embedder(_tags(TAGGING))}
    first, second = _chances(data, "mir", options=options), _chances(_reordered(data, order), "mir", options=options)
    assert {"tag-frequency ranking", "most common response", "answer permutation"} <= first.keys()
    assert first == second
