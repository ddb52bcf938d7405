"""The rule extractor on the rules of docs/protocols/factual.md and on real Music-LM answers (fixtures/factual)."""
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from musiceval.extraction import extract_labels, load_vocabulary, parse_yes_no
from musiceval.extraction.vocabulary import instrument_normalisation

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "factual"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def labels(text, vocab):
    return list(extract_labels(text, load_vocabulary(vocab)).labels)


@pytest.mark.parametrize(
    "text,vocab,expected",
    [
        # rule 1 and word boundaries
        ("A bassoon solo.", "musicnet-instruments", ["bassoon"]),
        ("Popular music with rocking drums", "gtzan", []),
        ("The piano and the PIANO again", "musicnet-instruments", ["piano"]),
        # rule 2: no guessing
        ("A swing rhythm with walking bass", "gtzan", []),
        ("Bluegrass (Banjo, fiddle, acoustic guitar)", "gtzan", []),
        # rule 3: comparatives
        ("It sounds more like rock than pop.", "gtzan", ["rock"]),
        ("Jazz rather than blues", "gtzan", ["jazz"]),
        ("Violin instead of viola", "musicnet-instruments", ["violin"]),
        # rule 4: deduplicated, order of first mention
        ("Cello, piano, cello and violins", "musicnet-instruments", ["cello", "piano", "violin"]),
        # rule 6: nothing relevant
        ("I cannot tell.", "gtzan", []),
        ("", "gtzan", []),
        # rule 7: canonical forms
        ("Reminds me of J.S. Bach, maybe Dvořák", "musicnet-composers", ["Bach", "Dvorak"]),
        ("Acoustic Grand Piano", "musicnet-instruments", ["piano"]),
        ("Acoustic Grand Piano", "nsynth", ["keyboard"]),
        ("double bass, contrabass and French horn", "musicnet-instruments", ["bass", "horn"]),
        ("hip hop, Hip-Hop, hiphop", "gtzan", ["hiphop"]),
        ("a bass guitar over a bass drum", "nsynth", ["bass"]),
        # rule 8: style-only mentions
        ("a jazz-like feeling", "gtzan", []),
        ("A blues song with a jazzy feel.", "gtzan", ["blues"]),
        ("blues with a country feel", "gtzan", ["blues"]),
        ("Mozart-like phrasing", "musicnet-composers", ["Mozart"]),  # composers: style is the question
        # negation
        ("no drums", "nsynth", []),
        ("A solo without guitar.", "nsynth", []),
        ("This is not a piano, it is a harpsichord.", "musicnet-instruments", ["harpsichord"]),
        ("There is no guitar, but a piano.", "nsynth", ["keyboard"]),
        ("There are no drums and no guitar, just a piano.", "musicnet-instruments", ["piano"]),
        ("Neither piano nor violin; a cello.", "musicnet-instruments", ["cello"]),
        ("The piano isn't there; a violin is.", "musicnet-instruments", ["violin"]),
        ("Not only piano but also violin", "musicnet-instruments", ["piano", "violin"]),
        ("No doubt it is jazz", "gtzan", ["jazz"]),
        # the hedging example of docs/protocols/factual.md
        ("pop/soft rock", "gtzan", ["pop", "rock"]),
    ],
)
def test_extraction_rules(text, vocab, expected):
    assert labels(text, vocab) == expected


REAL = [
    # MU-LLaMA, CMI-Bench GTZAN
    ("The genre of the given music is not specified.", "gtzan", []),
    ("The given music is a blues rock song.", "gtzan", ["blues", "rock"]),
    ("The given music is a blend of classical and hip-hop elements.", "gtzan", ["classical", "hiphop"]),
    ("The given music is a slow and emotional piece with a focus on the piano and strings.", "gtzan", []),
    ("The given music is a blues song with a jazzy feel.", "gtzan", ["blues"]),
    ("The given music is a blend of classical and jazz elements, with a touch of blues and country influence.", "gtzan",
     ["classical", "jazz", "blues", "country"]),
    # LTU, CMI-Bench GTZAN
    ("This audio clip does not contain any of the given genres: blues, classical, country, disco, hip-hop, jazz, metal, pop, "
     "reggae, rock. The genre is not specified in the audio clip.", "gtzan", []),
    ("This audio clip does not contain any of the given genres of music.\n\n### Audio caption: A bluesy, soulful, and jazzy "
     "music is playing.", "gtzan", []),
    ("lues, Hip-hop, Jazz, Metal, Pop", "gtzan", ["hiphop", "jazz", "metal", "pop"]),
    ("Blues (1), Hip-hop (2), Jazz (3)", "gtzan", ["blues", "hiphop", "jazz"]),
    ("0.0s-1.0s, 1.1s-2.0s, 2.1s-3.0s", "gtzan", []),
    # LTU, CMI-Bench NSynth instrument (NSynth families)
    ("Piano.", "nsynth", ["keyboard"]),
    ("This audio clip contains a violin, a trumpet, and a drum, but it is not possible to determine which instrument is "
     "playing.", "nsynth", ["string", "brass"]),
    ("This audio clip does not contain any of the specified instruments.", "nsynth", []),
    ("Instrument: trumpet; sound: bright, piercing, and loud; pitch: high; timbre: brass.", "nsynth", ["brass"]),
    ("The selected instrument is:\n\n* Piano: 0.0s-10.0s, 10.1s-10.2s", "nsynth", ["keyboard"]),
    # LTU, CMI-Bench MTG instrument / genre (shared data): negated lists
    ("The given audio is a classical piece with no violin, strings, or flute.", "musicnet-instruments", []),
    ("The given audio is a slow and ambient piece of music with no vocal and no drums.", "nsynth", []),
    ("The given audio is a piano piece with no strings or other instruments.", "nsynth", ["keyboard"]),
    ("The audio is tagged as having a sitar, drums, and no violin.", "musicnet-instruments", []),
]


@pytest.mark.parametrize("text,vocab,expected", REAL)
def test_real_answers(text, vocab, expected):
    assert labels(text, vocab) == expected


def test_every_midashenglm_nsynth_answer_extracts_its_literal_family():
    vocab = load_vocabulary("nsynth")
    for line in (FIXTURES / "nsynth_midashenglm.jsonl").read_text().splitlines():
        out = json.loads(line)["model_output"]
        assert extract_labels(out, vocab).labels == (out,)


@pytest.mark.parametrize("name,vocab", [("mullama_GTZAN.jsonl", "gtzan"), ("ltu_GTZAN.jsonl", "gtzan"),
                                        ("mullama_Nsynth_instrument.jsonl", "nsynth"), ("ltu_Nsynth_instrument.jsonl", "nsynth")])
def test_fixture_answers_extract_only_vocabulary_labels(name, vocab):
    v = load_vocabulary(vocab)
    for rec in json.loads((FIXTURES / name).read_text()):
        out = extract_labels(rec["response"], v).labels
        assert set(out) <= set(v.labels) and len(out) == len(set(out))


@pytest.mark.skipif(not (SHARED / "cmi-bench").exists(), reason="../shared/data not present")
def test_shared_cmi_bench_answers_never_crash_the_extractor():
    v = load_vocabulary("musicnet-instruments")
    for model in ("mullama", "ltu"):
        for task in ("MTG_instrument", "Nsynth_instrument"):
            for rec in json.loads((SHARED / "cmi-bench" / "outputs" / model / f"{model}_{task}.jsonl").read_text())[:800]:
                assert set(extract_labels(rec["response"], v).labels) <= set(v.labels)


def test_normalisation_is_data():
    table = instrument_normalisation()
    assert table["double bass"] == table["contrabass"] == "bass"
    assert table["french horn"] == "horn" and table["acoustic grand piano"] == "piano"


def test_vocabulary_files(tmp_path):
    (tmp_path / "v.txt").write_text("# my labels\nsitar: sitars\ntabla\n")
    v = load_vocabulary(tmp_path / "v.txt")
    assert v.labels == ("sitar", "tabla") and labels("two sitars, no tabla", tmp_path / "v.txt") == ["sitar"]
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_vocabulary(tmp_path / "bad.json")
    with pytest.raises(FileNotFoundError, match="built-in"):
        load_vocabulary("no-such-vocab")
    assert load_vocabulary("gtzan").hash != load_vocabulary("nsynth").hash


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gives_vocabulary_labels_without_duplicates(text):
    v = load_vocabulary("nsynth")
    out = extract_labels(text, v).labels
    assert set(out) <= set(v.labels) and len(out) == len(set(out))


def test_huge_looping_answer():
    out = labels("Blues, Hip-hop, Jazz, " * 3000, "gtzan")
    assert out == ["blues", "hiphop", "jazz"]


@pytest.mark.parametrize("text,expected", [("Yes.", True), ("No, it is not.", False), ("Yes, a piano is used.", True),
                                           ("The piano is not used.", False), ("Maybe.", None), ("", None),
                                           ("I am not sure.", None), ("It is hard to tell.", None), ("No, I don't know.", False)])
def test_parse_yes_no(text, expected):
    assert parse_yes_no(text) is expected
