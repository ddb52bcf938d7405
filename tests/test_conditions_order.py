"""Random condition: independent of the order of the input (seed + item ids only), and the
constructive clip-avoiding derangement (always found when one exists, refused exactly when none does)."""
from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from musiceval.conditions import (
    NoDerangementError,
    clip_avoiding_derangement,
    random_audio_assignment,
    random_recorded_responses,
)
from musiceval.records import Item


def _valid(perm, clips) -> bool:
    return sorted(perm.tolist()) == list(range(len(clips))) and all(clips[perm[i]] != clips[i] for i in range(len(clips)))


@st.composite
def recorded_groups(draw):
    n = draw(st.integers(2, 40))
    prompts = draw(st.lists(st.sampled_from(["Describe", "Hear", "Genre?"]), min_size=n, max_size=n))
    clips = draw(st.lists(st.sampled_from([f"t{k}" for k in range(6)]), min_size=n, max_size=n))
    order = draw(st.permutations(range(n)))
    return n, prompts, clips, order


@settings(max_examples=60, deadline=None)
@given(recorded_groups(), st.integers(0, 2**31 - 1), st.booleans())
def test_random_recorded_responses_do_not_depend_on_the_order_of_the_file(case, seed, with_clips):
    n, prompts, clips, order = case
    ids = [f"item{k:03d}" for k in range(n)]
    responses = [f"answer {k}" for k in range(n)]
    kw = {"clips": clips} if with_clips else {}
    ref = random_recorded_responses(ids, prompts, responses, seed, draws=2, **kw)
    shuffled = random_recorded_responses([ids[k] for k in order], [prompts[k] for k in order],
                                         [responses[k] for k in order], seed, draws=2,
                                         **({"clips": [clips[k] for k in order]} if with_clips else {}))
    assert shuffled == ref
    by_id = dict(zip(ids, range(n)))
    for draw in ref.draws:
        for item_id, text in draw.items():
            k, partner = by_id[item_id], int(text.split()[-1])
            assert partner != k and prompts[partner] == prompts[k]
            if with_clips:
                assert clips[partner] != clips[k]


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 30), st.integers(1, 4), st.integers(0, 2**31 - 1), st.randoms(use_true_random=False))
def test_random_audio_assignment_does_not_depend_on_the_order_of_items(n_clips, per_clip, seed, rnd):
    items = [Item(id=f"q{c}_{j}", question="?", audio=f"clip{c}.wav") for c in range(n_clips) for j in range(per_clip)]
    shuffled = list(items)
    rnd.shuffle(shuffled)
    assert random_audio_assignment(shuffled, seed, draws=2) == random_audio_assignment(items, seed, draws=2)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=0, max_size=30), st.integers(0, 2**31 - 1))
def test_a_clip_avoiding_derangement_is_found_exactly_when_one_exists(clips, seed):
    rng = np.random.default_rng(seed)
    exists = len(clips) >= 2 and 2 * max(Counter(clips).values()) <= len(clips)
    if exists:
        assert _valid(clip_avoiding_derangement(clips, rng), clips)
    else:
        with pytest.raises(NoDerangementError):
            clip_avoiding_derangement(clips, rng)


@pytest.mark.parametrize("n", [2, 4, 10, 1000, 10_001])
def test_one_clip_holding_exactly_half_is_always_paired(n):
    half = n // 2
    clips = ["big"] * half + [f"other{k}" for k in range(n - half)]
    if n % 2:  # odd n: "big" holds floor(n/2), the most it can
        assert 2 * half <= n
    for seed in range(5):
        perm = clip_avoiding_derangement(clips, np.random.default_rng(seed))
        assert _valid(perm, clips)
    # every "big" item must take an "other" item and vice versa (n even): a perfect exchange
    if n % 2 == 0:
        assert all(clips[perm[i]] != "big" for i in range(half))


def test_one_clip_holding_more_than_half_is_unpaired_and_named():
    with pytest.raises(NoDerangementError, match=r"clip 'big' holds 6 of 11 items"):
        clip_avoiding_derangement(["big"] * 6 + ["x"] * 5, np.random.default_rng(0))
    ids = [f"i{k}" for k in range(14)]
    prompts = ["p"] * 11 + ["q"] * 3
    clips = ["big"] * 6 + ["x"] * 5 + ["a", "b", "c"]
    rr = random_recorded_responses(ids, prompts, ids, seed=0, clips=clips)
    assert rr.unpaired == tuple(sorted(ids[:11]))
    assert set(rr.draws[0]) == {"i11", "i12", "i13"}


def test_75k_items_sharing_tracks_are_all_paired_without_their_own_track():
    n = 75_000
    ids = [f"id{k:06d}" for k in range(n)]
    clips = [f"track{k // 7}" for k in range(n)]  # 7 questions per track, as in shared-track files
    rr = random_recorded_responses(ids, ["Describe the music."] * n, list(range(n)), seed=3, clips=clips)
    assert rr.unpaired == ()
    partner = np.array([rr.draws[0][i] for i in ids])
    assert sorted(partner.tolist()) == list(range(n))
    own = np.array([k // 7 for k in range(n)])
    assert not np.any(own[partner] == own)


@pytest.mark.parametrize("clips", [list("xxyy"), list("xxyyzz"), list("xxxyyz"), list("xxxxyyyz")])
def test_the_draw_reaches_every_valid_pairing_evenly(clips):
    """Every valid permutation is drawn, none more than twice or less than half as often as the
    average (a Markov chain with symmetric moves: uniform-ish, not exactly uniform)."""
    n = len(clips)
    valid = [p for p in itertools.permutations(range(n)) if all(clips[p[i]] != clips[i] for i in range(n))]
    rng = np.random.default_rng(0)
    draws = 60 * len(valid)
    counts = Counter(tuple(clip_avoiding_derangement(clips, rng).tolist()) for _ in range(draws))
    assert set(counts) == set(valid)
    expected = draws / len(valid)
    assert max(counts.values()) < 2 * expected and min(counts.values()) > expected / 2


def test_duplicate_item_ids_are_refused_by_name():
    with pytest.raises(ValueError, match="item id 'a' occurs more than once"):
        random_recorded_responses(["a", "a", "b"], ["p"] * 3, ["1", "2", "3"], seed=0)
