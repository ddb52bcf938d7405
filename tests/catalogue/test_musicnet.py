"""MusicNet metadata: composers, ensemble -> instruments table, per-note labels."""
from pathlib import Path

import pytest

from musiceval.catalogue.datasets.musicnet import ensemble_table, load_musicnet, note_label_instruments
from musiceval.extraction import load_vocabulary

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "factual" / "musicnet_metadata.csv"


def test_every_fixture_recording_gets_instruments_and_a_composer():
    items, failures = load_musicnet(FIXTURE, task="instruments")
    assert len(items) == 320 and not failures
    composers, _ = load_musicnet(FIXTURE, task="composers")
    assert {it.labels[0] for it in composers} == set(load_vocabulary("musicnet-composers").labels)


def test_ensemble_table_uses_the_instrument_vocabulary():
    vocab = set(load_vocabulary("musicnet-instruments").labels)
    table = ensemble_table()
    for name, instruments in {**table["ensembles"], **table["overrides"]}.items():
        assert set(instruments) <= vocab, name
    assert set(table["midi_programs"].values()) == vocab


def test_string_quartet_and_trout_override():
    items, _ = load_musicnet(FIXTURE)
    by_id = {it.id: it for it in items}
    assert by_id["1727"].labels == ("piano", "violin", "viola", "cello", "bass")  # Schubert's Trout
    quartet = next(it for it in items if it.meta["ensemble"] == "String Quartet")
    assert quartet.labels == ("violin", "viola", "cello")


def test_note_labels_replace_the_table(tmp_path):
    (tmp_path / "train_labels").mkdir()
    (tmp_path / "train_labels" / "1727.csv").write_text(
        "start_time,end_time,instrument,note,start_beat,end_beat,note_value\n"
        "9182,90078,43,53,4.0,1.5,Dotted Quarter\n9182,33758,1,65,4.0,0.5,Eighth\n9182,33758,43,65,4.0,0.5,Eighth\n"
    )
    items, _ = load_musicnet(FIXTURE, labels_dir=tmp_path)
    item = next(it for it in items if it.id == "1727")
    assert item.labels == ("cello", "piano") and item.meta["label_source"] == "notes"


def test_bad_inputs(tmp_path):
    bad = tmp_path / "labels.csv"
    bad.write_text("start_time,end_time,instrument\n0,1,999\n")
    with pytest.raises(ValueError, match="unknown MusicNet instrument code '999'"):
        note_label_instruments(bad)
    meta = tmp_path / "meta.csv"
    meta.write_text("id,composer,composition,movement,ensemble\n1,Bach,X,1,Kazoo Band\nabc,Bach,X,1,Solo Piano\n")
    items, failures = load_musicnet(meta)
    assert items == [] and len(failures) == 2
    assert "Kazoo Band" in failures[0].reason and "musicnet_ensembles.json" in failures[0].reason
    (tmp_path / "nohdr.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="missing column"):
        load_musicnet(tmp_path / "nohdr.csv")
    with pytest.raises(FileNotFoundError, match="musicnet_metadata.csv"):
        load_musicnet(tmp_path / "absent.csv")
