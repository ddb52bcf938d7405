"""Triplet generation by tree distance, and the published-triplet CSV loader."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from musiceval.vocab.audioset import load_ontology
from musiceval.protocols.triplets.formats import (
    TripletFileError,
    generate_triplets,
    load_triplet_csv,
    negation_triplets,
    sample_triplets,
)

FIXTURE_CSV = Path(__file__).resolve().parents[2] / "fixtures" / "text_encoders" / "triplets_sample.csv"


@pytest.fixture(scope="module")
def ontology():
    return load_ontology()


@pytest.fixture(scope="module")
def small_subtree(tmp_path_factory):
    """Root -> A -> {A1, A2};  Root -> B -> B1."""
    def node(i, children=()):
        return {"id": i, "name": i, "description": f"def of {i}", "child_ids": list(children)}

    path = tmp_path_factory.mktemp("onto") / "ontology.json"
    path.write_text(json.dumps([node("Root", ["A", "B"]), node("A", ["A1", "A2"]), node("B", ["B1"]),
                                node("A1"), node("A2"), node("B1")]))
    return load_ontology(path).subtree("Root")


def as_tuples(triplets):
    return [(t.anchor, t.positive, t.negative) for t in triplets.triplets]


def test_small_tree_gives_exactly_the_hand_enumerated_triplets(small_subtree):
    expected = {
        ("A", "A1", "B"), ("A", "A1", "B1"), ("A", "A2", "B"), ("A", "A2", "B1"),
        ("A1", "A", "A2"), ("A1", "A", "B"), ("A1", "A", "B1"),
        ("A1", "A2", "B"), ("A1", "A2", "B1"),
        ("A2", "A", "A1"), ("A2", "A", "B"), ("A2", "A", "B1"),
        ("A2", "A1", "B"), ("A2", "A1", "B1"),
        ("B", "B1", "A"), ("B", "B1", "A1"), ("B", "B1", "A2"),
        ("B1", "B", "A"), ("B1", "B", "A1"), ("B1", "B", "A2"),
    }
    got = as_tuples(generate_triplets(small_subtree))
    assert len(got) == len(set(got)) == 20
    assert set(got) == expected


def test_full_subtrees_counts_unfiltered(ontology):
    # The published study kept 13,633 genre and 37,640 instrument triplets after manual filtering.
    assert len(generate_triplets(ontology.subtree("genre"))) == 17450
    assert len(generate_triplets(ontology.subtree("instrument"))) == 74497


@pytest.mark.parametrize("which", ["genre", "instrument"])
def test_every_generated_triplet_obeys_the_distance_rule(ontology, which):
    sub = ontology.subtree(which)
    triplets = generate_triplets(sub, seed=3, max_triplets=3000)
    for t in triplets.triplets:
        d_ap, d_an = sub.distance(t.anchor, t.positive), sub.distance(t.anchor, t.negative)
        assert 0 < d_ap < d_an, t
        assert sub.shares_branch(t.anchor, t.positive), t
    assert not any(t.negated for t in triplets.triplets)


def test_generation_is_deterministic_and_samples_are_ordered_subsets(ontology):
    sub = ontology.subtree("genre")
    full = generate_triplets(sub)
    a = generate_triplets(sub, seed=7, max_triplets=500)
    b = generate_triplets(sub, seed=7, max_triplets=500)
    c = generate_triplets(sub, seed=8, max_triplets=500)
    assert a == b and len(a) == 500
    assert as_tuples(a) != as_tuples(c)
    order = {t.id: i for i, t in enumerate(full.triplets)}
    positions = [order[t.id] for t in a.triplets]
    assert positions == sorted(positions)
    assert len(set(t.id for t in full.triplets)) == len(full)


def test_sample_sizes_at_the_edges(small_subtree):
    assert len(generate_triplets(small_subtree, max_triplets=0)) == 0
    assert len(generate_triplets(small_subtree, max_triplets=10**6)) == 20
    with pytest.raises(ValueError, match="max_triplets"):
        generate_triplets(small_subtree, max_triplets=-1)


def test_negation_triplets_negate_anchor_and_positive(small_subtree):
    neg = negation_triplets(small_subtree)
    assert len(neg) == 16  # 8 valid anchor-positive pairs x {no anchor, no positive}
    assert all(t.negated and t.negative in (t.anchor, t.positive) for t in neg.triplets)
    assert ("A", "A1", "A") in as_tuples(neg) and ("A", "A1", "A1") in as_tuples(neg)


def write(tmp_path: Path, data: bytes | str) -> Path:
    path = tmp_path / "triplets.csv"
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def test_loader_reads_plain_negation_quoted_and_bom_rows(tmp_path):
    path = write(tmp_path, "\ufeffanchor,positive,negative\r\n"
                 "Heavy metal,Punk rock,Jazz\r\n"
                 '"Steel guitar, slide guitar",Electric guitar,Cello\r\n'
                 "\r\n"
                 "Heavy metal,Punk rock,no Heavy metal\r\n"
                 "Heavy metal,Punk rock,No punk rock\r\n")
    ts = load_triplet_csv(path)
    assert ts.failures == ()
    assert [t.id for t in ts.triplets] == ["L2", "L3", "L5", "L6"]
    assert ts.triplets[1].anchor == "Steel guitar, slide guitar"
    assert [(t.negative, t.negated) for t in ts.triplets[2:]] == [("Heavy metal", True), ("punk rock", True)]


def test_loader_ignores_extra_columns_and_column_order(tmp_path):
    ts = load_triplet_csv(write(tmp_path, "Negative,id,Anchor,Positive\nJazz,7,Heavy metal,Punk rock\n"))
    assert [(t.anchor, t.positive, t.negative) for t in ts.triplets] == [("Heavy metal", "Punk rock", "Jazz")]


def test_malformed_rows_are_counted_failures_with_their_line(tmp_path):
    rows = [
        "anchor,positive,negative",
        "Heavy metal,Punk rock,Jazz",       # 2 ok
        "Heavy metal,Punk rock",            # 3 too few fields
        "Heavy metal,,Jazz",                # 4 empty field
        "Jazz,Jazz,Blues",                  # 5 anchor == positive
        "Jazz,Blues,Blues",                 # 6 negative repeats positive
        "Jazz,Blues,no ",                   # 7 negation of nothing
        ",,",                               # 8 all empty
        "Jazz,Blues," + "x" * 600,          # 9 over-long label
        "Jazz,Blues,Rock\x00music",         # 10 NUL
    ]
    data = ("\n".join(rows) + "\n").encode("utf-8") + b"Jazz,Blues,Caf\xe9\nJazz,Blues,Funk\n"  # 11 latin-1 byte, 12 ok
    ts = load_triplet_csv(write(tmp_path, data))
    assert [t.id for t in ts.triplets] == ["L2", "L12"]
    assert [f.item_id for f in ts.failures] == [f"L{i}" for i in range(3, 12)]
    reasons = [f.reason for f in ts.failures]
    for fragment, reason in zip(["fields", "empty", "same label", "repeats", "no label", "empty", "characters", "NUL", "UTF-8"], reasons):
        assert fragment in reason and "triplets.csv:" in reason


def test_a_field_beyond_the_csv_limit_fails_one_row_only(tmp_path):
    data = 'anchor,positive,negative\n"' + "y" * 200_000 + '",a,b\nJazz,Blues,Funk\n'
    ts = load_triplet_csv(write(tmp_path, data))
    assert len(ts.failures) == 1 and [t.negative for t in ts.triplets] == ["Funk"]


@pytest.mark.parametrize("data, match", [
    ("", "empty file"),
    ("a,b,c\nx,y,z\n", "lacks columns"),
    ("anchor;positive;negative\n", "lacks columns"),
])
def test_unusable_files_raise_naming_the_fix(tmp_path, data, match):
    with pytest.raises(TripletFileError, match=match):
        load_triplet_csv(write(tmp_path, data))


def test_missing_file_raises(tmp_path):
    with pytest.raises(TripletFileError, match="not found"):
        load_triplet_csv(tmp_path / "none.csv")


def test_fixture_csv_loads_cleanly_with_both_kinds():
    ts = load_triplet_csv(FIXTURE_CSV)
    assert ts.failures == () and len(ts) > 0
    kinds = {t.negated for t in ts.triplets}
    assert kinds == {True, False}
    assert sample_triplets(ts, 5, seed=1) == sample_triplets(ts, 5, seed=1)


def test_an_unterminated_quote_fails_its_row_and_swallows_none_after_it(tmp_path):
    """csv reads an open quote to the end of the file; every later row must still be read."""
    path = tmp_path / "t.csv"
    path.write_text('anchor,positive,negative\nRock music,Jazz,Opera\n"unterminated,Jazz,Opera\nBlues,Funk,Techno\n'
                    'Salsa music,Opera,Jazz\n"Rock\nmusic",Jazz,Opera\n')
    data = load_triplet_csv(path)
    assert [t.anchor for t in data.triplets] == ["Rock music", "Blues", "Salsa music"]
    reasons = [f.reason for f in data.failures]
    # line 3 opens a quote that csv would close at line 6; lines 6-7 are a label with a line break
    assert len(reasons) == 3 and "t.csv:3: unreadable CSV row (unterminated quote" in reasons[0]
    assert "t.csv:6:" in reasons[1] and "t.csv:7:" in reasons[2]
