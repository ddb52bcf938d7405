"""FMA metadata loader on a small file in FMA's exact layout (two-row header, track_id row)."""
import pytest

from musiceval.catalogue.datasets.fma import genre_parents, load_fma, load_fma_genres, top_level_titles
from musiceval.extraction import load_vocabulary
from musiceval.metrics.sets import hierarchy_labels, set_scores

GENRES = """genre_id,#tracks,parent,title,top_level
2,5271,0,International,2
12,32923,0,Rock,12
15,34413,0,Electronic,15
21,8389,0,Hip-Hop,21
25,9261,12,Punk,12
66,1138,12,Indie-Rock,12
85,3,25,Post-Punk,12
286,1,15,Chip Music,15
"""
TRACKS = """,set,set,track,track,track
,split,subset,genre_top,genres,title
track_id,,,,,
2,training,small,Hip-Hop,[21],Food
3,training,medium,Hip-Hop,[21],Electric Ave
140,test,small,Rock,"[25, 85]",Punky
141,test,small,,[],No Genre
142,test,small,Electronic,[not a list,Bad
5,validation,large,Rock,[12],Big
"""


@pytest.fixture
def meta_dir(tmp_path):
    (tmp_path / "genres.csv").write_text(GENRES)
    (tmp_path / "tracks.csv").write_text(TRACKS)
    return tmp_path


def test_small_subset_items_and_failures(meta_dir):
    items, failures = load_fma(meta_dir, subset="small")
    assert [(it.id, it.labels) for it in items] == [("2", ("Hip-Hop",)), ("140", ("Rock",))]
    assert items[1].meta["genres"] == ["Punk", "Post-Punk"]
    assert {f.item_id for f in failures} == {"141", "142"}
    medium, _ = load_fma(meta_dir, subset="medium")
    assert {it.id for it in medium} == {"2", "3", "140"}


def test_genre_tree_drives_same_tree_scoring(meta_dir):
    genres = load_fma_genres(meta_dir / "genres.csv")
    parents = genre_parents(genres)
    assert parents["Post-Punk"] == "Punk" and parents["Rock"] is None
    assert top_level_titles(genres) == ["Electronic", "Hip-Hop", "International", "Rock"]
    pred, true = ["Post-Punk"], ["Rock"]
    assert set_scores([pred], [true])["macro"]["f1"] == 0.0
    assert set_scores([hierarchy_labels(pred, parents)], [hierarchy_labels(true, parents)])["macro"]["f1"] == 1.0


def test_top_level_titles_are_in_the_fma_vocabulary(meta_dir):
    vocab = load_vocabulary("fma-top")
    assert set(top_level_titles(load_fma_genres(meta_dir / "genres.csv"))) <= set(vocab.labels)


def test_missing_and_malformed_files(tmp_path, meta_dir):
    with pytest.raises(FileNotFoundError, match="fma_metadata"):
        load_fma(tmp_path / "nowhere")
    (tmp_path / "genres.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="missing column"):
        load_fma_genres(tmp_path / "genres.csv")
    with pytest.raises(ValueError, match="subset"):
        load_fma(meta_dir, subset="tiny")


def test_genre_vocabulary_and_tree_in_canonical_labels(meta_dir):
    from musiceval.catalogue.datasets.fma import fma_genre_tree, fma_genre_vocabulary

    genres = load_fma_genres(meta_dir / "genres.csv")
    vocab = fma_genre_vocabulary(genres)
    assert set(vocab.labels) == {g.title for g in genres.values()} and vocab.canonical("hip hop") == "Hip-Hop"
    tree = fma_genre_tree(genres, vocab)
    assert hierarchy_labels(["Post-Punk", "Chip Music"], tree) == ["Rock", "Electronic"]


def test_missing_audio_is_named_for_the_failure_count(meta_dir, tmp_path):
    audio = tmp_path / "fma_small"
    (audio / "000").mkdir(parents=True)
    (audio / "000" / "000002.mp3").write_bytes(b"x")
    items, _ = load_fma(meta_dir, subset="small", audio_dir=audio)
    by_id = {it.id: it for it in items}
    assert by_id["2"].audio.endswith("000002.mp3") and "missing_audio" not in by_id["2"].meta
    assert by_id["140"].audio is None and by_id["140"].meta["missing_audio"].endswith("000/000140.mp3")
