"""MMAU's string_match and RUListening's answer extraction / leave-one-out vote, rule by rule."""
from __future__ import annotations

import pytest

from musiceval.metrics.choice import UNANSWERED
from musiceval.metrics.mmau_matcher import match_mmau, string_match
from musiceval.metrics.rul_matcher import extract_letter, leave_one_out_vote, match_rul, score_question


@pytest.mark.parametrize("answer,prediction,choices,want", [
    ("Violin", "The melody is played by a violin.", ["Piano", "Violin", "Flute"], True),
    ("Minor", "It could be major or minor.", ["Major", "Minor", "Modal"], False),       # names a wrong option's token
    ("Electric bass", "An electric bass.", ["Double bass", "Electric bass", "Tuba"], True),  # shared "bass" is allowed
    ("Double bass", "A bass.", ["Double bass", "Electric bass", "Tuba"], False),           # "double" missing
    ("3/4", "In 3/4 time", ["3/4", "4/4", "6/8"], True),                                   # tokens 3, 4; 4/4 adds none
    ("Scat", "raps and scat", ["Rap", "Scat", "Opera"], True),                               # "raps" is not the token "rap"
    ("Piano", "", ["Piano", "Organ"], False),                                                # no prediction
    ("man", "A man speaks", ["Man", "man", "Woman"], True),                                  # identical token sets ignored
])
def test_string_match_cases(answer, prediction, choices, want):
    assert string_match(answer, prediction, choices) is want


def test_match_mmau_is_string_match_as_an_index():
    opts = ["Piano", "Grand piano", "Organ"]
    assert match_mmau("a grand piano", opts) == 1
    assert match_mmau("a piano", opts) == 0
    assert match_mmau("piano or organ", opts) == UNANSWERED
    assert match_mmau(None, opts) == UNANSWERED
    # the one divergence: options with identical token sets are both accepted officially, ambiguous here
    assert string_match("man", "a man", ["Man", "man"]) and match_mmau("a man", ["Man", "man"]) == UNANSWERED


MAP = {"A": "Flute", "B": "Tabla melody", "C": "Oud", "D": "Sitar"}


@pytest.mark.parametrize("response,want", [
    ("[[A]] then [[C]]", "C"),                        # last bracketed letter
    ("My answer is b.", "B"),                         # phrase, case-insensitive, upper-cased
    ("I select D, or maybe I guess A", "A"),          # last phrase match
    ("Between (C) and option A ...", "A"),            # bare mentions: alphabetical order, not textual
    ("It is clearly an oud", "C"),                    # verbatim option text
    ("Option E", "E"),                                 # a letter with no option: the pass has no answer
    ("no idea", ""),
])
def test_extract_letter_order_of_rules(response, want):
    assert extract_letter(response, MAP) == want


def test_match_rul_refuses_a_letter_outside_the_options():
    opts = list(MAP.values())
    assert match_rul("[[E]]", opts) == UNANSWERED and match_rul("Option E", opts) == UNANSWERED
    assert match_rul("[[D]]", opts) == 3 and match_rul(b"I choose B", opts) == 1


def test_leave_one_out_vote_and_question_score():
    assert leave_one_out_vote(["", "", ""]) == ""
    assert leave_one_out_vote(["Oud", "Flute", "Flute", "Oud"]) == "Oud"  # tie: first extracted wins
    m1, m2 = {"A": "Oud", "B": "Flute"}, {"A": "Flute", "B": "Oud"}
    got = score_question("Oud", [("[[A]]", m1), ("[[A]]", m2), ("[[B]]", m2), ("no answer", m1)])
    assert got["answer"] == "Oud" and got["correct"] is True
    assert got["pass_correct"] == [True, False, True, False] and got["votes"] == {"Oud": 2, "Flute": 1}
