"""The live FMA / MusicNet factual path end to end, as ``musiceval/protocols/factual/gates.py`` runs it:
metadata layouts in tmp_path -> loaders -> tiny random Qwen2-Audio (CPU) -> response cache ->
rule extraction -> scores, with missing and unreadable audio counted as per-item failures."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

from musiceval.catalogue.datasets.fma import load_fma  # noqa: E402
from musiceval.catalogue.datasets.musicnet import load_musicnet  # noqa: E402
from musiceval.extraction import load_vocabulary  # noqa: E402
from musiceval.models import GenerationSettings, load_model  # noqa: E402
from musiceval.models.cache import ResponseCache  # noqa: E402
from musiceval.models.qwen2audio import build_tiny_checkpoint  # noqa: E402
from musiceval.protocols.factual.live import live_factual  # noqa: E402

GENRES = """genre_id,#tracks,parent,title,top_level
12,32923,0,Rock,12
15,34413,0,Electronic,15
21,8389,0,Hip-Hop,21
25,9261,12,Punk,12
"""
# FMA's tracks.csv: two header rows plus the track_id row
TRACKS = """,set,set,track,track,track
,split,subset,genre_top,genres,title
track_id,,,,,
2,training,small,Hip-Hop,[21],Food
5,training,small,Rock,"[12, 25]",Punky
10,test,small,Electronic,[15],Beeps
20,test,small,Rock,[12],No File
"""
MUSICNET = """id,composer,composition,movement,ensemble,source,transcriber,catalog_name,seconds
1727,Schubert,Piano Quintet in A major,2. Andante,Piano Quintet,European Archive,www.kunstderfuge.com,D667,447
1759,Bach,Cello Suite 4,6. Gigue,Solo Cello,Museopen,www.jsbach.net,BWV1010,163
2303,Beethoven,Piano Sonata No 1,1. Allegro,Solo Piano,Musopen,Segundo G. Yogore,OP2NO1,214
2382,Mozart,Sonata in F major,1. Allegro,Violin and Harpsichord,Musopen,x,K376,300
"""
SETTINGS = GenerationSettings(temperature=0.0, max_tokens=4, seed=0)


def noise(path, seconds: float, seed: int, fmt: str = "WAV") -> None:
    import soundfile as sf

    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), (np.random.default_rng(seed).standard_normal(int(seconds * 16_000)) * 0.1).astype(np.float32),
             16_000, format=fmt)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    directory = build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-qwen2-audio"))
    m = load_model(f"hf:{directory}", device="cpu", num_threads=1, chunk_seconds=1.0)
    yield m
    m.close()


@pytest.fixture
def fma_root(tmp_path):
    meta = tmp_path / "fma" / "fma_metadata"
    meta.mkdir(parents=True)
    (meta / "genres.csv").write_text(GENRES)
    (meta / "tracks.csv").write_text(TRACKS)
    audio = tmp_path / "fma" / "fma_small"
    noise(audio / "000" / "000002.mp3", 2.0, 1, "MP3")  # two 1 s chunks
    noise(audio / "000" / "000005.mp3", 0.8, 2, "MP3")
    (audio / "000" / "000010.mp3").write_bytes(b"not audio at all")  # unreadable: a generation failure
    return tmp_path  # track 20 has no file: a missing-audio failure


def test_fma_generate_cache_extract_score_with_failures_counted(model, fma_root):
    items, bad = load_fma(fma_root / "fma" / "fma_metadata", subset="small", audio_dir=fma_root / "fma" / "fma_small")
    assert not bad and [it.id for it in items] == ["2", "5", "10", "20"]
    cache = ResponseCache(fma_root / "cache")
    run = live_factual(model, items, load_vocabulary("fma-top"), data_dir=fma_root, cache=cache, seed=0,
                       n_permutations=50, settings=SETTINGS)
    result = run.result
    reasons = {f.item_id: f.reason for f in result.failures}
    assert "20" in reasons and "audio file not found" in reasons["20"] and "000020.mp3" in reasons["20"]
    assert "10" in reasons and "000010.mp3" in reasons["10"]  # unreadable file, named
    assert result.scores["correct"]["f1"].ids == ("2", "5")
    # every number is a real score of the tiny model's (label-free) answers: nothing is named, F1 0
    assert set(result.metrics) == {"correct", "random", "chance"}
    assert result.metrics["correct"]["n"] == 2 and result.metrics["correct"]["f1"] == 0.0
    # Random audio is another clip (a derangement over 2, 5, 10): a pairing with the unreadable
    # clip 10 fails that Random answer, counted in the generation failures, not dropped
    random_failed = {f.item_id for f in run.generation.failures if f.reason.startswith("random")} & {"2", "5"}
    assert result.metrics["random"]["n"] == 2 - len(random_failed) and result.metrics["random"]["n_unpaired"] == len(random_failed)
    chunked = [r for r in run.generation.responses if r.item_id == "2" and r.condition == "correct"]
    assert [r.meta["chunk"] for r in chunked] == [0, 1]  # answered per 1 s chunk, aggregated per item
    assert run.generation.n_generated > 0 and run.generation.n_cached == 0

    again = live_factual(model, items, load_vocabulary("fma-top"), data_dir=fma_root, cache=ResponseCache(fma_root / "cache"),
                         seed=0, n_permutations=50, settings=SETTINGS)
    assert again.generation.n_generated == 0 and again.generation.n_cached == run.generation.n_generated
    assert again.result.metrics == result.metrics


def test_musicnet_instruments_and_composers_with_the_among_prompt(model, tmp_path):
    (tmp_path / "musicnet_metadata.csv").write_text(MUSICNET)
    noise(tmp_path / "train_data" / "1727.wav", 0.6, 3)
    noise(tmp_path / "test_data" / "1759.wav", 0.6, 4)
    noise(tmp_path / "train_data" / "2303.wav", 0.6, 5)  # 2382 has no audio
    for task, vocab_name in (("instruments", "musicnet-instruments"), ("composers", "musicnet-composers")):
        items, bad = load_musicnet(tmp_path / "musicnet_metadata.csv", task=task, labels_dir=tmp_path, audio_dir=tmp_path)
        assert not bad
        vocab = load_vocabulary(vocab_name)
        run = live_factual(model, items, vocab, data_dir=tmp_path, cache=ResponseCache(tmp_path / f"cache-{task}"),
                           prompt_variant="among", max_items=4, n_permutations=50, settings=SETTINGS)
        assert [f.item_id for f in run.missing_audio] == ["2382"]
        assert "2382" in {f.item_id for f in run.result.failures}
        assert all(it.question.startswith("Among ") and vocab.labels[-1].replace("_", " ") in it.question for it in run.items)
        assert {r.prompt for r in run.generation.responses} == {run.items[0].question}
        assert run.result.scores["correct"]["f1"].ids == ("1727", "1759", "2303")
        assert run.result.metrics["correct"]["n"] == 3 and run.result.metrics["random"]["n"] == 3
        assert len(run.result.null_f1) == 50


def test_unknown_prompt_variant_is_refused(model, tmp_path):
    with pytest.raises(ValueError, match="prompt_variant"):
        live_factual(model, [], load_vocabulary("gtzan"), data_dir=tmp_path, prompt_variant="binary")


def test_closed_variants_through_the_live_path(model, fma_root):
    from musiceval.protocols.factual.live import live_closed

    items, _ = load_fma(fma_root / "fma" / "fma_metadata", subset="small", audio_dir=fma_root / "fma" / "fma_small")
    vocab = load_vocabulary("fma-top")
    binary = live_closed(model, items, vocab, "binary", data_dir=fma_root, cache=ResponseCache(fma_root / "c1"), settings=SETTINGS)
    assert all(it.question.startswith("Between ") for it in binary.items)
    reasons = {f.item_id: f.reason for f in binary.result.failures}
    assert "audio file not found" in reasons["20"] and "000010.mp3" in reasons["10"]
    assert "2 audio chunks" in reasons["2"]  # 2 s at 1 s chunks: one choice per item is required
    scores = binary.result.scores["accuracy"]
    assert scores.ids == ("5",) and len(scores.failures) == 3  # the gate sees every failure
    assert binary.result.metrics["correct"]["n_neither"] == 1  # the tiny model names no genre
    tf = live_closed(model, items[1:2], vocab, "true-false", data_dir=fma_root, cache=ResponseCache(fma_root / "c2"),
                     settings=SETTINGS, n_permutations=10)
    assert len(tf.items) == len(vocab.labels) and tf.result.metrics["correct"]["n_cells"] == len(vocab.labels)
    assert tf.result.metrics["correct"]["n_unanswered"] == len(vocab.labels)  # noise words: never yes or no


def test_binary_distractor_is_never_a_spelling_of_a_true_label(model, fma_root):
    """Item labels in another spelling ("hip hop") are canonicalised before a distractor is drawn."""
    from dataclasses import replace

    from musiceval.protocols.factual.live import live_closed

    items, _ = load_fma(fma_root / "fma" / "fma_metadata", subset="small", audio_dir=fma_root / "fma" / "fma_small")
    vocab = load_vocabulary("fma-top")
    spelled = [replace(it, labels=("hip hop", "ROCK")) for it in items if it.audio]
    closed = live_closed(model, spelled, vocab, "binary", data_dir=fma_root, cache=ResponseCache(fma_root / "c3"),
                         settings=SETTINGS)
    for it in closed.items:
        assert set(it.meta["options"]) & {"Hip-Hop"} and not set(it.meta["options"]) & {"Rock", "hip hop", "ROCK"}
