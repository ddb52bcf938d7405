"""Multiple-choice prompts: the published format, seeded shuffles, examples, ablations."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from musiceval.vocab.choice_prompts import (
    ANSWER_TYPE,
    DISTRACTOR_TYPES,
    ablation_options,
    build_prompt,
    build_prompts,
    distractor_settings,
    format_example,
    format_question,
    shuffle_options,
    to_canonical,
)
from musiceval.metrics.choice import LETTERS, UNANSWERED
from musiceval.records import Item

TYPES = (ANSWER_TYPE, *DISTRACTOR_TYPES)


def _items(n=6, per_track=2):
    return [
        Item(id=f"q{i}", question=f"Question number {i}?", choices=(f"right{i}", f"near{i}", f"true{i}", f"far{i}"),
             answer="A", group=f"track{i // per_track}", meta={"distractor_types": TYPES, "knowledge": ("melody",)})
        for i in range(n)
    ]


def test_published_format():
    # MuChoMusic prepare_prompts.get_prompts, character for character.
    assert format_question("What rhythm?", ["Four on the floor.", "Off-beat."]) == (
        "Question: What rhythm?\n Options: (A) Four on the floor. (B) Off-beat. \n The correct answer is: "
    )
    example = format_example("Q1?", ["x", "y", "z", "w"], "C")
    assert example.endswith("The correct answer is: C")
    assert build_prompt("Q2?", ["a", "b", "c", "d"], [example, example]) == (
        example + " " + example + "\n Question: Q2?\n Options: (A) a (B) b (C) c (D) d \n The correct answer is: "
    )
    assert build_prompt("Q2?", ["a", "b"]) == format_question("Q2?", ["a", "b"])


def test_build_prompts_records_permutation_and_answer():
    items = _items()
    prompts = build_prompts(items, runs=3, n_examples=1, seed=7)
    assert len(prompts) == 3 * len(items)
    by_id = {item.id: item for item in items}
    for p in prompts:
        item = by_id[p.item_id]
        assert p.choices == tuple(item.choices[j] for j in p.permutation)
        assert p.choices[LETTERS.index(p.answer)] == item.choices[0]  # the answer survives the shuffle
        assert p.distractor_types[LETTERS.index(p.answer)] == ANSWER_TYPE
        assert to_canonical(LETTERS.index(p.answer), p.permutation) == 0
        assert p.prompt.endswith(format_question(item.question, p.choices))
        assert len(p.example_ids) == 1 and p.example_ids[0] != p.item_id
        assert by_id[p.example_ids[0]].group != item.group  # examples come from other tracks
        assert p.distractor_setting == "all"
    # the three runs use different shuffles
    runs = {p.run: [q.permutation for q in prompts if q.run == p.run] for p in prompts}
    assert runs[0] != runs[1] != runs[2]


def test_build_prompts_is_seeded_and_order_independent():
    items = _items()
    a = build_prompts(items, runs=2, n_examples=0, seed=1)
    assert a == build_prompts(items, runs=2, n_examples=0, seed=1)
    assert a != build_prompts(items, runs=2, n_examples=0, seed=2)
    # one item's shuffle does not depend on the other items
    alone = build_prompts(items[:1], runs=2, n_examples=0, seed=1)
    assert [p.permutation for p in alone] == [p.permutation for p in a if p.item_id == "q0"]


@pytest.mark.parametrize("n_examples", [0, 1, 5])
def test_in_context_examples(n_examples):
    prompts = build_prompts(_items(8), runs=1, n_examples=n_examples, seed=0)
    for p in prompts:
        assert len(set(p.example_ids)) == n_examples and p.item_id not in p.example_ids
        assert p.prompt.count("The correct answer is:") == n_examples + 1
        assert p.prompt.startswith("Question: ")


def test_examples_fall_back_to_same_track_when_too_few_tracks():
    prompts = build_prompts(_items(4, per_track=3), runs=1, n_examples=2, seed=0)
    assert all(len(p.example_ids) == 2 for p in prompts)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"runs": 0}, "runs must be >= 1"),
        ({"n_examples": 6}, "between 0 and 5"),
        ({"n_examples": -1}, "between 0 and 5"),
        ({"distractors": ("nonsense",)}, "at least one of"),
        ({"n_examples": 5}, "need more than 5 questions"),
    ],
)
def test_build_prompts_rejects_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_prompts(_items(3), **kwargs)


def test_duplicate_ids_are_rejected():
    with pytest.raises(ValueError, match="unique"):
        build_prompts(_items(2) * 2, n_examples=0)


@pytest.mark.parametrize("setting", distractor_settings())
def test_distractor_ablation_prompts(setting):
    prompts = build_prompts(_items(), runs=1, n_examples=1, distractors=setting, seed=0)
    for p in prompts:
        assert len(p.choices) == 1 + len(setting)
        assert set(p.distractor_types) == {ANSWER_TYPE, *setting}
        assert p.prompt.count("(") == 2 * (1 + len(setting))  # the example is ablated too
        expected = "all" if len(setting) == 3 else "+".join(setting)
        assert p.distractor_setting == expected


def test_distractor_settings_are_the_seven_subsets():
    settings_ = distractor_settings()
    assert len(settings_) == 7 and tuple(DISTRACTOR_TYPES) in settings_


def test_ablation_needs_distractor_types():
    item = Item(id="d", question="q", choices=("a", "b", "c", "d"), answer="C")
    assert ablation_options(item, DISTRACTOR_TYPES) == (("a", "b", "c", "d"), ())
    with pytest.raises(ValueError, match="no 'distractor_types'"):
        ablation_options(item, ("incorrect_but_related",))
    # items without types shuffle with their own answer letter
    p = build_prompts([item], runs=1, n_examples=0)[0]
    assert p.choices[LETTERS.index(p.answer)] == "c"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=5), min_size=2, max_size=4, unique=True), st.integers(0, 2**32 - 1))
def test_shuffle_permutation_round_trips(options, seed):
    shown, permutation = shuffle_options(options, np.random.default_rng(seed))
    assert sorted(permutation) == list(range(len(options)))
    for j, text in enumerate(shown):
        assert options[to_canonical(j, permutation)] == text
    assert to_canonical(UNANSWERED, permutation) == UNANSWERED
