"""length_batches: every text once, longest first, within the text and padded-token budgets."""
from __future__ import annotations

import numpy as np
import pytest

from musiceval.encoders.batches import length_batches


@pytest.mark.parametrize("seed", range(5))
def test_batches_cover_every_text_once_within_both_budgets(seed):
    lengths = np.random.default_rng(seed).integers(1, 600, size=500).tolist()
    batches = length_batches(lengths, max_texts=64, max_tokens=4096)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(500))
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)  # longest first
    for b in batches:
        longest = max(lengths[i] for i in b)
        assert len(b) <= 64
        assert len(b) * longest <= 4096 or len(b) == 1  # a text over the budget goes alone
    assert [len(b) for b in batches if lengths[b[0]] > 4096] in ([], [1] * len([x for x in lengths if x > 4096]))


def test_short_texts_fill_to_the_text_limit_and_ties_keep_input_order():
    assert length_batches([3, 5, 3, 5], max_texts=3, max_tokens=1000) == [[1, 3, 0], [2]]
    assert length_batches([100, 100, 100], max_texts=64, max_tokens=250) == [[0, 1], [2]]
    assert length_batches([5000, 10], max_texts=64, max_tokens=4096) == [[0], [1]]
    assert length_batches([], max_texts=8, max_tokens=100) == []
