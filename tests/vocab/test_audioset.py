"""AudioSet ontology loading, the music subtrees and tree distance on the DAG."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from musiceval.vocab.audioset import FIXTURE_ONTOLOGY, SUBTREE_ROOTS, definitions, load_ontology

SHARED_ONTOLOGY = Path(__file__).resolve().parents[3] / "shared" / "data" / "audioset" / "ontology.json"


@pytest.fixture(scope="module")
def ontology():
    return load_ontology()


def write(tmp_path: Path, entries) -> Path:
    path = tmp_path / "ontology.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


def node(id_, name, children=(), description="d"):
    return {"id": id_, "name": name, "description": description, "child_ids": list(children), "restrictions": []}


def test_bundled_ontology_has_every_class_and_no_failures(ontology):
    assert len(ontology.nodes) == 632
    assert ontology.failures == ()


@pytest.mark.skipif(not SHARED_ONTOLOGY.is_file(), reason="../shared/data not present")
def test_bundled_copy_matches_the_shared_reference_data():
    assert FIXTURE_ONTOLOGY.read_bytes() == SHARED_ONTOLOGY.read_bytes()


def test_subtrees_hold_the_music_classes_without_their_top(ontology):
    genre, instrument = ontology.subtree("genre"), ontology.subtree("instrument")
    assert (len(genre.labels), len(instrument.labels)) == (65, 91)
    assert "Music genre" not in genre.names and "Rock music" in genre.names
    assert "Guitar" in instrument.names and "Rock music" not in instrument.names
    assert genre.root == SUBTREE_ROOTS["genre"] == ontology.by_name("Music genre").id
    # a subtree can be named by class name too
    assert ontology.subtree("Musical instrument").labels == instrument.labels


def test_distance_and_shared_branch_on_a_tree_path(ontology):
    genre = ontology.subtree("genre")
    assert genre.distance("Heavy metal", "Heavy metal") == 0
    assert genre.distance("Rock music", "Heavy metal") == 1
    assert genre.distance("Heavy metal", "Punk rock") == 2
    assert genre.distance("Heavy metal", "Jazz") == 3  # through the top class only
    assert genre.shares_branch("Heavy metal", "Punk rock")
    assert not genre.shares_branch("Heavy metal", "Jazz")
    assert not genre.shares_branch("Rock music", "Pop music")


def test_multiple_parents_take_the_shortest_path_through_any_common_ancestor(ontology):
    instrument = ontology.subtree("instrument")
    # Cowbell is under both Percussion and Bell
    cowbell = ontology.by_name("Cowbell").id
    assert set(instrument.parents[cowbell]) == {ontology.by_name("Percussion").id, ontology.by_name("Bell").id}
    assert instrument.distance("Cowbell", "Church bell") == 2  # via Bell
    assert instrument.distance("Cowbell", "Tabla") == 3  # via Percussion -> Drum
    assert instrument.shares_branch("Cowbell", "Church bell") and instrument.shares_branch("Cowbell", "Drum")
    genre = ontology.subtree("genre")
    # Hip hop music and Vocal music share a child (Beatboxing), not an ancestor below the top
    assert genre.distance("Hip hop music", "Vocal music") == 2
    assert not genre.shares_branch("Hip hop music", "Vocal music")
    assert genre.distance("Beatboxing", "A capella") == 2 and genre.distance("Beatboxing", "Trap music") == 2


def test_distance_matrix_is_a_symmetric_metric_with_zero_diagonal(ontology):
    for which in SUBTREE_ROOTS:
        d = ontology.subtree(which).distances
        assert np.array_equal(d, d.T) and np.all(np.diag(d) == 0) and np.all(d[~np.eye(len(d), dtype=bool)] > 0)


def test_definitions_are_the_ontology_descriptions(ontology):
    genre = ontology.subtree("genre")
    defs = dict(zip(genre.names, genre.definitions))
    assert defs["Rock music"].startswith('A genre of popular music that originated as "rock and roll"')
    assert definitions(ontology)["Guitar"].startswith("Sounds of a string instrument")


def test_malformed_entries_are_counted_failures(tmp_path):
    path = write(tmp_path, [
        node("/r", "Root", ["/a", "/missing"]),
        node("/a", "A", ["/b"]),
        node("/b", "B"),
        node("/a", "A again"),
        {"id": "/x"},
        "not an object",
        {"id": "/y", "name": "Y", "child_ids": "oops"},
    ])
    onto = load_ontology(path)
    assert set(onto.nodes) == {"/r", "/a", "/b"}
    reasons = " | ".join(f.reason for f in onto.failures)
    assert len(onto.failures) == 5
    assert "duplicate id" in reasons and "'name'" in reasons and "not an object" in reasons
    assert "child_ids" in reasons and "name no class" in reasons
    assert onto.nodes["/r"].child_ids == ("/a",)


def test_a_cyclic_ontology_terminates(tmp_path):
    path = write(tmp_path, [node("/r", "Root", ["/a"]), node("/a", "A", ["/b"]), node("/b", "B", ["/a", "/c"]), node("/c", "C")])
    sub = load_ontology(path).subtree("/r")
    assert sub.names == ("A", "B", "C")
    assert sub.distance("A", "C") == 2 and sub.shares_branch("A", "C")


@pytest.mark.parametrize("content, match", [
    (b"", "not a UTF-8 JSON"),
    (b"{\"id\": 1}", "JSON list"),
    (b"\xff\xfe[]", "not a UTF-8 JSON"),
    (b"[" * 100000, "not a UTF-8 JSON"),
])
def test_unreadable_files_raise_naming_the_file(tmp_path, content, match):
    path = tmp_path / "ontology.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match):
        load_ontology(path)


def test_missing_file_names_the_download(tmp_path):
    with pytest.raises(FileNotFoundError, match="github.com/audioset/ontology"):
        load_ontology(tmp_path / "nope.json")


def test_unknown_subtree_is_a_key_error_naming_the_class(ontology):
    with pytest.raises(KeyError, match="Polka"):
        ontology.subtree("Polka")
