"""Conditions: seeded derangements, prompt-grouped Random for recorded responses, Noise, rewrites."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from musiceval.conditions import (
    derangement,
    load_rewrites,
    mean_over_draws,
    noise_like,
    random_audio_assignment,
    random_recorded_responses,
)
from musiceval.records import Item


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 60), st.integers(0, 2**31 - 1))
def test_derangement_is_a_permutation_without_fixed_points(n, seed):
    perm = derangement(n, np.random.default_rng(seed))
    assert sorted(perm) == list(range(n))
    assert not np.any(perm == np.arange(n))


def test_derangement_of_one_item_is_refused():
    with pytest.raises(ValueError, match="at least 2"):
        derangement(1, np.random.default_rng(0))


def test_derangement_is_uniform_over_the_nine_derangements_of_four():
    rng = np.random.default_rng(0)
    counts: dict[tuple, int] = {}
    for _ in range(9000):
        key = tuple(derangement(4, rng))
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 9 and min(counts.values()) > 850


def test_random_audio_never_gives_an_item_its_own_clip_and_is_seeded():
    items = [Item(id=f"q{k}", question="?", audio=f"clip{k // 3}.wav") for k in range(30)]  # 3 questions per clip
    a = random_audio_assignment(items, seed=7, draws=3)
    assert a == random_audio_assignment(items, seed=7, draws=3)
    assert a != random_audio_assignment(items, seed=8, draws=3)
    for draw in a:
        assert all(draw[it.id] != it.audio for it in items)
        # questions on one clip move together to one other clip
        assert len({draw[f"q{k}"] for k in range(3)}) == 1
    assert a[0] != a[1]
    with pytest.raises(ValueError, match="no audio"):
        random_audio_assignment([Item(id="x", question="?")], seed=0)


def test_random_recorded_responses_stay_within_the_same_prompt():
    ids = [f"i{k}" for k in range(9)]
    prompts = ["Describe"] * 4 + ["Hear"] * 4 + ["Unique question"]
    responses = [f"{p}-answer-{k}" for k, p in enumerate(prompts)]
    rr = random_recorded_responses(ids, prompts, responses, seed=3, draws=4)
    assert rr.unpaired == ("i8",)
    for draw in rr.draws:
        assert set(draw) == set(ids[:8])
        for k, item_id in enumerate(ids[:8]):
            assert draw[item_id] != responses[k]
            assert draw[item_id].split("-")[0] == prompts[k]
    assert rr == random_recorded_responses(ids, prompts, responses, seed=3, draws=4)
    # one group's draw does not depend on the presence of another group
    only_hear = random_recorded_responses(ids[4:8], prompts[4:8], responses[4:8], seed=3, draws=4)
    assert all(only_hear.draws[d] == {i: rr.draws[d][i] for i in ids[4:8]} for d in range(4))


def test_random_recorded_responses_avoid_the_same_clip():
    ids = ["a", "b", "c", "d"]
    clips = ["x", "x", "y", "y"]
    rr = random_recorded_responses(ids, ["p"] * 4, ["ra", "rb", "rc", "rd"], seed=0, draws=5, clips=clips)
    for draw in rr.draws:
        assert draw["a"] in ("rc", "rd") and draw["c"] in ("ra", "rb")
    # one clip holding most of a prompt group: no valid partner exists, the items are unpaired
    stuck = random_recorded_responses(["a", "b", "c"], ["p"] * 3, ["ra", "rb", "rc"], seed=0, clips=["x", "x", "y"])
    assert stuck.unpaired == ("a", "b", "c") and stuck.draws == ({},)


def test_mean_over_draws_averages_per_item():
    draws = [{"a": "x", "b": "y"}, {"a": "y", "b": "x"}]
    out = mean_over_draws(lambda d: {i: 1.0 if t == "x" else 0.0 for i, t in d.items()}, draws)
    assert out == {"a": 0.5, "b": 0.5}


def test_noise_has_the_clip_length_and_level_and_is_seeded():
    clip = np.sin(np.linspace(0, 100, 48000)).astype(np.float32) * 0.5
    n1, n2 = noise_like(clip, seed=1), noise_like(clip, seed=1)
    assert n1.shape == clip.shape and n1.dtype == np.float32
    np.testing.assert_array_equal(n1, n2)
    assert abs(np.sqrt(np.mean(n1**2)) - np.sqrt(np.mean(clip**2))) < 0.02
    assert not np.array_equal(n1, noise_like(clip, seed=2))


def test_load_rewrites_reads_the_fixture_layout(tmp_path):
    path = tmp_path / "rw.jsonl"
    rec = {"id": "audios_eval_1_ab.flac", "question": "Describe the audio", "reference": "A calm piano piece.",
           "skyline": "A peaceful piece played on piano.", "adversarial": "A frantic organ piece.", "source": "hand-written"}
    path.write_text(json.dumps(rec) + "\n\n")
    rw = load_rewrites(path)["audios_eval_1_ab.flac"]
    assert rw.skyline.startswith("A peaceful") and rw.source == "hand-written"
    path.write_text(json.dumps({**rec, "adversarial": ""}) + "\n")
    with pytest.raises(ValueError, match=r"rw.jsonl:1: field 'adversarial'"):
        load_rewrites(path)
    path.write_text(json.dumps(rec) + "\n" + json.dumps(rec) + "\n")
    with pytest.raises(ValueError, match="duplicate id"):
        load_rewrites(path)
    path.write_text("{not json\n")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_rewrites(path)
    with pytest.raises(FileNotFoundError, match="rewrites_handwritten"):
        load_rewrites(tmp_path / "missing.jsonl")


def test_the_shipped_hand_written_rewrites_load_and_are_labelled():
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "fixtures" / "freeform" / "rewrites_handwritten.jsonl"
    if not path.exists():
        pytest.skip("fixtures/freeform/rewrites_handwritten.jsonl not written yet")
    rewrites = load_rewrites(path)
    assert len(rewrites) >= 60
    assert {r.source for r in rewrites.values()} == {"hand-written"}
    assert all(r.skyline != r.reference and r.adversarial != r.reference for r in rewrites.values())
