"""map_batches: batches run side by side on the CPU's threads give the same rows, bit for bit, as
one thread, in order, and every batch once."""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from musiceval.encoders.batches import map_batches  # noqa: E402
from musiceval.encoders.embedding_cache import EmbeddingCache  # noqa: E402
from musiceval.encoders.sentence import MeanPoolingEncoder, bundled_minilm_path  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl"


@pytest.fixture
def threads():
    before = torch.get_num_threads()

    def use(n: int) -> None:
        torch.set_num_threads(n)

    yield use
    torch.set_num_threads(before)


def _texts(n: int) -> list[str]:
    from musiceval.data.musicqa import load_dasheng_musicqa

    data = load_dasheng_musicqa(FIXTURE)
    return list(dict.fromkeys([r.text for r in data.responses if r.text.strip()] + [it.reference for it in data.items]))[:n]


def test_results_come_in_order_from_worker_threads_each_on_one_torch_thread(threads):
    threads(2)

    def work(k: int) -> tuple[int, int, str]:
        return k, torch.get_num_threads(), threading.current_thread().name

    got = list(map_batches(work, list(range(40))))
    seen = [k for k, _, _ in got]
    assert seen == list(range(40))
    assert {n for _, n, _ in got} == {1}
    assert all(name.startswith("musiceval-batch") for _, _, name in got)
    assert torch.get_num_threads() == 2  # the caller's setting is back


def test_one_thread_runs_in_the_callers_thread_and_an_error_reaches_the_caller(threads):
    threads(1)
    names = {name for name in map_batches(lambda _: threading.current_thread().name, [1, 2, 3])}
    assert names == {threading.current_thread().name}
    threads(2)

    def fail(k: int) -> int:
        if k == 5:
            raise ValueError("batch 5")
        return k

    with pytest.raises(ValueError, match="batch 5"):
        list(map_batches(fail, list(range(20))))
    assert torch.get_num_threads() == 2


def test_sentence_rows_are_the_same_bits_on_one_and_two_threads(threads):
    texts = _texts(300)
    encoder = MeanPoolingEncoder(bundled_minilm_path())
    threads(1)
    one = encoder.encode(texts)
    threads(2)
    two = encoder.encode(texts)
    assert one.shape == (len(texts), 384)
    np.testing.assert_array_equal(one, two)
    assert encoder.n_encoded == 2 * len(texts)


def test_bertscore_token_rows_are_the_same_bits_on_one_and_two_threads(threads, tmp_path):
    pytest.importorskip("bert_score")
    from bert_score import BERTScorer

    from musiceval.encoders.bertscore_cache import TokenCachedBERTScorer

    texts = _texts(240)
    cands, refs = texts[:120], texts[120:]
    scorer = BERTScorer(model_type=bundled_minilm_path(), num_layers=6)
    runs = []
    for n, cache in ((1, "one"), (2, "two")):
        threads(n)
        cached = TokenCachedBERTScorer(scorer, EmbeddingCache(tmp_path / cache))
        runs.append(torch.stack(cached.score(cands, refs, batch_size=16)).numpy())
        assert cached.n_embedded == len(set(texts))
    np.testing.assert_array_equal(runs[0], runs[1])
    expected = torch.stack(scorer.score(cands, refs, batch_size=16)).numpy()
    np.testing.assert_allclose(runs[1], expected, atol=2e-6, rtol=0)
