"""Answer matchers and accuracy metrics of the multiple-choice protocol (MuChoMusic)."""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score

from musiceval.metrics.choice import (
    ANSWER_PREFIX,
    LETTERS,
    UNANSWERED,
    accuracy,
    choice_summary,
    correct_indicator,
    get_matcher,
    instruction_following_rate,
    match_muchomusic,
    match_strict,
    run_spread,
    strict_letter_tokens,
    unanswered_rate,
    validate_options,
)

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "choice" / "dev_midashenglm.jsonl"
OPTIONS = ["Reggae", "Pop music", "Latin rock", "Ska"]


def upstream_extract(output: str, options: list[str]) -> int:
    """Reference: the algorithm of ``extract_responses`` in MuChoMusic's ``muchomusic_eval/scoring.py``
    (github.com/mulab-mir/muchomusic), restated for one output."""
    output = output.split(ANSWER_PREFIX)[-1].strip()
    letters = ["A", "B", "C", "D"]
    hits = list(set(letters).intersection(output))
    if len(hits) == 1:
        return letters.index(hits[0])
    normalized_output = output.lower().strip()
    for i, answer in enumerate(j.lower().strip() for j in options):
        if answer in normalized_output:
            return i
    return -1


# --------------------------------------------------------------------------- real outputs

# Every distinct model_output of MiDashengLM in the fixture slice, with what each matcher reads.
REAL_PATTERNS = {
    "A": (0, 0),
    "B": (1, 1),
    "C": (2, 2),
    "D": (3, 3),
    # The published rule sees the A of "Answer" and the D: two letters, then no option text.
    "Answer: D": (UNANSWERED, 3),
}


def test_real_patterns_cover_every_distinct_fixture_output():
    outputs = {json.loads(line)["model_output"] for line in FIXTURE.read_text("utf-8").splitlines() if line.strip()}
    assert outputs == set(REAL_PATTERNS), "a new output pattern appeared: add it to REAL_PATTERNS"


@pytest.mark.parametrize("output,expected", sorted(REAL_PATTERNS.items()))
def test_matchers_on_real_midashenglm_outputs(output, expected):
    assert (match_muchomusic(output, OPTIONS), match_strict(output, OPTIONS)) == expected
    assert match_muchomusic(output, OPTIONS) == upstream_extract(output, OPTIONS)


def test_matchers_on_every_fixture_record_agree_with_upstream():
    for line in FIXTURE.read_text("utf-8").splitlines():
        row = json.loads(line)
        assert match_muchomusic(row["model_output"], row["choices"]) == upstream_extract(row["model_output"], row["choices"])


# --------------------------------------------------------------------------- adversarial outputs

ADVERSARIAL = [
    # (output, muchomusic, strict)
    ("A or B", UNANSWERED, UNANSWERED),
    ("Both A and D", UNANSWERED, UNANSWERED),  # B of "Both", A, D: three letters
    ("I cannot answer", UNANSWERED, UNANSWERED),
    ("", UNANSWERED, UNANSWERED),
    ("b", UNANSWERED, UNANSWERED),  # lower case is not an option letter in either rule
    # Quoting all four options: the published rule falls back to the first option text found.
    ("(A) Reggae (B) Pop music (C) Latin rock (D) Ska", 0, UNANSWERED),
    ("The correct answer is: (B) Pop music", 1, 1),
    ("Question: x\n Options: (A) Reggae (B) Pop music \n The correct answer is: C", 2, 2),
    ("it sounds like latin rock to me", 2, 2),
    ("latin rock or maybe ska", 2, UNANSWERED),  # strict needs exactly one option text
    ("I think the answer is B", 1, 1),
    ("Answer: B", UNANSWERED, 1),
    ("(B)", 1, 1),
    ("B)", 1, 1),
    ("B.", 1, 1),
    ("**B**", 1, 1),
    ("The option is:\n  B  \nbecause of the skank rhythm", 1, 1),
    ("Bossa nova vibes", 1, UNANSWERED),  # a capital B inside a word: one letter for the published rule
    ("B.B. King would approve", 1, UNANSWERED),
    ("(A) or (C)?", UNANSWERED, UNANSWERED),
    (None, UNANSWERED, UNANSWERED),
]


@pytest.mark.parametrize("output,muchomusic,strict", ADVERSARIAL)
def test_matchers_on_adversarial_outputs(output, muchomusic, strict):
    assert match_muchomusic(output, OPTIONS) == muchomusic
    assert match_strict(output, OPTIONS) == strict
    if isinstance(output, str):
        assert match_muchomusic(output, OPTIONS) == upstream_extract(output, OPTIONS)


def test_non_utf8_bytes_are_decoded_with_replacement():
    assert match_muchomusic(b"\xff\xfe C", OPTIONS) == 2
    assert match_strict(b"\xff\xfe\nC\n", OPTIONS) == 2
    assert match_strict(b"\xff\xfe\x80", OPTIONS) == UNANSWERED


def test_megabyte_outputs_are_matched():
    looping = "go go go " * 120_000 + "\nAnswer: C"
    assert len(looping) > 1_000_000
    assert match_strict(looping, OPTIONS) == 2
    assert match_muchomusic(looping, OPTIONS) == upstream_extract(looping, OPTIONS) == UNANSWERED
    blank = "\n" * 1_000_000 + " " * 1_000_000 + "B"
    assert match_strict(blank, OPTIONS) == 1
    assert match_muchomusic(blank, OPTIONS) == 1


def test_non_text_output_is_a_type_error():
    with pytest.raises(TypeError, match="str, bytes or None"):
        match_strict(3, OPTIONS)


def test_letter_beyond_the_options_is_unanswered():
    # Two-option ablation: "D" names no option. Upstream returns index 3 (never correct).
    assert match_muchomusic("D", ["Reggae", "Ska"]) == UNANSWERED
    assert match_strict("(D)", ["Reggae", "Ska"]) == UNANSWERED
    assert match_strict("(B)", ["Reggae", "Ska"]) == 1


def test_strict_option_text_inside_a_longer_option_is_one_mention():
    options = ["Guitar", "Acoustic guitar", "Drums", "Vocals"]
    assert match_strict("an acoustic guitar throughout", options) == 1
    assert match_strict("a distorted guitar", options) == 0
    assert match_strict("acoustic guitar and drums", options) == UNANSWERED
    assert match_muchomusic("an acoustic guitar throughout", options) == 0  # published: first found


def test_strict_letter_tokens():
    assert strict_letter_tokens("(A) x B) y C. z **D**") == {"A", "B", "C", "D"}
    assert strict_letter_tokens("answer is c, Bach, A-minor") == set()
    assert strict_letter_tokens("ANSWER: C") == {"C"}


def test_get_matcher_names():
    assert get_matcher("muchomusic") is match_muchomusic
    assert get_matcher("strict") is match_strict
    with pytest.raises(ValueError, match="choose one of airbench-foundation, mmau, muchomusic, rul, strict"):
        get_matcher("loose")


# --------------------------------------------------------------------------- option validation

@pytest.mark.parametrize(
    "options,answer,message",
    [
        (["a", "b", "c", "d", "e"], "A", "expected 2 to 4 choices, got 5"),
        (["a"], "A", "expected 2 to 4 choices, got 1"),
        (["a", "b", "a", "d"], "A", "duplicate choice 'a'"),
        (["Pop", "b", " pop ", "d"], "A", "duplicate choice"),
        (["a", "", "c", "d"], "A", "choice B must be a non-empty string"),
        (["a", None, "c", "d"], "A", "choice B must be a non-empty string"),
        (["a", "b", "c", "d"], "E", "answer letter 'E' is not one of the choices A, B, C, D"),
        (["a", "b", "c"], "D", "not one of the choices A, B, C"),
        ("abcd", "A", "choices must be a list"),
    ],
)
def test_validate_options_names_the_problem(options, answer, message):
    with pytest.raises(ValueError, match=message):
        validate_options(options, answer)


def test_validate_options_accepts_ablations():
    validate_options(["a", "b"], "B")
    validate_options(["a", "b", "c", "d"], None)


# --------------------------------------------------------------------------- metrics

def test_accuracy_ifr_unanswered_against_sklearn():
    pred = [0, 1, -1, 3, 2, -1, 0, 0]
    true = [0, 2, 1, 3, 2, 0, 1, 0]
    assert accuracy(pred, true) == pytest.approx(accuracy_score(true, pred))
    assert instruction_following_rate(pred) == pytest.approx(6 / 8)
    assert unanswered_rate(pred) == pytest.approx(2 / 8)
    np.testing.assert_array_equal(correct_indicator(pred, true), [1, 0, 0, 1, 1, 0, 0, 1])


def test_metrics_of_empty_input_are_nan_and_mismatch_raises():
    assert math.isnan(accuracy([], []))
    assert math.isnan(instruction_following_rate([]))
    assert math.isnan(unanswered_rate([]))
    with pytest.raises(ValueError, match="lengths differ"):
        accuracy([0, 1], [0])
    with pytest.raises(ValueError, match=">= 0"):
        accuracy([0], [-1])


def test_choice_summary_per_dimension():
    pred = [0, 1, -1, 2]
    true = [0, 2, 1, 2]
    knowledge = [("melody",), ("melody", "harmony"), (), ("harmony",)]
    reasoning = [(), (), (), ()]
    out = choice_summary(pred, true, {"knowledge": knowledge, "reasoning": reasoning})
    assert out["accuracy"] == 0.5 and out["ifr"] == 0.75 and out["unanswered"] == 0.25 and out["n"] == 4
    assert set(out["per_dimension"]) == {"knowledge"}  # no item has a reasoning tag
    assert out["per_dimension"]["knowledge"]["melody"] == {"n": 2, "accuracy": 0.5, "ifr": 1.0, "unanswered": 0.0}
    assert out["per_dimension"]["knowledge"]["harmony"]["accuracy"] == 0.5
    assert choice_summary(pred, true)["per_dimension"] == {}
    with pytest.raises(ValueError, match="3 tag lists for 4 items"):
        choice_summary(pred, true, {"knowledge": knowledge[:3]})


def test_run_spread_against_statistics():
    runs = [0.61, 0.64, 0.58]
    out = run_spread(runs)
    assert out["mean"] == pytest.approx(statistics.mean(runs))
    assert out["std"] == pytest.approx(statistics.stdev(runs))
    assert (out["min"], out["max"], out["n_runs"]) == (0.58, 0.64, 3)
    assert run_spread([0.5])["std"] == 0.0
    with pytest.raises(ValueError, match="at least one run"):
        run_spread([])


# --------------------------------------------------------------------------- properties

NO_OPTION_LETTERS = st.text(alphabet=st.sampled_from(list("efghijklmnopqrstuvwxyzEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;!?()*\n\t-'")), max_size=200)
WORDS = st.lists(st.text(alphabet="ABCDabcdefxyz", min_size=2, max_size=8), max_size=30)


@settings(max_examples=100, deadline=None)
@given(NO_OPTION_LETTERS)
def test_strict_never_answers_without_letter_token_or_option_text(text):
    # No A-D anywhere, and the options contain letters a-d, so none can occur either.
    assert match_strict(text, OPTIONS) == UNANSWERED


@settings(max_examples=100, deadline=None)
@given(WORDS)
def test_strict_ignores_letters_inside_words(words):
    # Every A-D stands inside a word of two or more letters: never an option token.
    text = " ".join(words)
    assert match_strict(text, ["zz1", "zz2", "zz3", "zz4"]) == UNANSWERED


@settings(max_examples=100, deadline=None)
@given(NO_OPTION_LETTERS, st.sampled_from(LETTERS), st.integers(1, 3), NO_OPTION_LETTERS)
def test_exactly_one_letter_selects_it(before, letter, repeats, after):
    text = before + letter * repeats + after
    assert match_muchomusic(text, OPTIONS) == LETTERS.index(letter)


MIXED = st.lists(st.sampled_from(list("ABCDabcdxyz :()\n") + ["Reggae", "ska", "Latin rock", ANSWER_PREFIX]),
                 max_size=40).map("".join)


@settings(max_examples=150, deadline=None)
@given(MIXED)
def test_muchomusic_matches_upstream_reference(text):
    assert match_muchomusic(text, OPTIONS) == upstream_extract(text, OPTIONS)


@settings(max_examples=100, deadline=None)
@given(MIXED)
def test_matchers_return_an_option_index_or_unanswered(text):
    for match in (match_muchomusic, match_strict):
        assert match(text, OPTIONS) in (UNANSWERED, 0, 1, 2, 3)
