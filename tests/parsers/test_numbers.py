"""Ratings (EMO regression) and MIDI pitches (NSynth) from real answers."""
import pytest

from musiceval.parsers import ParseError
from musiceval.parsers.numbers import note_name_to_midi, parse_midi_pitch, parse_rating, parse_rating_cmi

# real LTU / MU-LLaMA EMO_arousal answers
THREE = "The estimated arousal scores for the given music are 2, 8, and 5 respectively."
RANGE = ("The arousal score of the music is subjective and can vary depending on the listener's perception. However, "
         "based on the given examples, the music is likely to have a moderate arousal level, ranging from 5 to 7.")
FIVE = "The arousal score of the music is estimated to be 5."
HALF = "The arousal score of the music is estimated to be 2.5, which is moderate."
PROSE = "The music has a medium tempo and moderate intensity, with a balanced rhythm and melody."


def test_cmi_rating_rule():
    assert parse_rating_cmi(FIVE) == 5
    assert parse_rating_cmi(HALF) == 2.5
    assert parse_rating_cmi(THREE) == 2  # the first number wins (2cafca5, 39a9c9b; 35235cb reads 5)
    assert parse_rating_cmi(RANGE) == 5
    assert parse_rating_cmi(PROSE) is None
    assert parse_rating_cmi("score 0.6") == 6  # "0" is dropped, "6" kept: a toolkit quirk
    assert parse_rating_cmi("a 7 out of 9 on a 1-9 scale") == 7


# Answers on which the toolkit's versions disagree, or look as if they might. Expected values are
# worked out from the text of extract_int (nicolaus625/CMI-bench evaluate.py), run after cal_r2
# deletes "out of 9": delete "1-9 scale", "from 1 to 9", "<d>-point scale", "<d>/<d> time
# signature", "<d>/<d> beat", "Example <d>"; numbers = every digit run, kept when 0 < int < 10;
# none -> -0.5 (None here); two runs a, b with "a.b" in the text -> float a.b; two equal runs -> that
# integer; otherwise int(numbers[0]) at 2cafca5 and 39a9c9b, int(numbers[-1]) at 35235cb.
SEPARATING = [
    # runs 2, 8, 5: three runs, so neither two-run branch applies -> first 2, last 5
    pytest.param(THREE, 2, 5, id="2, 8, and 5"),
    # runs 8, 9: "8.9" is not in the text and 8 != 9 -> first 8, last 9
    pytest.param("I would say around 8 and 9.", 8, 9, id="around 8 and 9"),
    # runs 5, 2 and "5.2" is in the text -> the float 5.2 at every commit (the toolkit's comment says
    # "score is 5.2 -> 5", its code returns 5.2)
    pytest.param("The score is 5.2.", 5.2, 5.2, id="5.2"),
    # runs 7, 7: "7.7" is not in the text, the two are equal -> 7 at every commit
    pytest.param("7, because of the driving drums, so 7.", 7, 7, id="7 twice"),
    # "Example 1" deleted -> runs 4, 6 -> first 4, last 6
    pytest.param("Like Example 1, I would say 4, maybe 6.", 4, 6, id="Example 1, 4, 6"),
    # "out of 9" then "1-9 scale" deleted -> runs 6, 3 -> first 6, last 3
    pytest.param("A 6 out of 9 on a 1-9 scale, or a 3.", 6, 3, id="6 out of 9, 3"),
    # "4/4 time signature" deleted -> runs 120, 7, 10; only 7 is in 1..9 -> 7 at every commit
    pytest.param("At 120 BPM in a 4/4 time signature, energy 7 of 10.", 7, 7, id="bpm and time signature"),
    # runs 0, 6: 0 is dropped, one run left -> 6 at every commit
    pytest.param("score 0.6", 6, 6, id="0.6"),
    # run 10 is dropped -> none -> missing at every commit
    pytest.param("10", None, None, id="10"),
]


@pytest.mark.parametrize("text,first,last", SEPARATING)
def test_cmi_rating_rule_per_toolkit_commit(text, first, last):
    assert parse_rating_cmi(text) == first  # extract_int at 2cafca5 and 39a9c9b
    assert parse_rating_cmi(text, last=True) == last  # extract_int at 35235cb


def test_default_rating_rule():
    assert parse_rating(FIVE) == 5
    assert parse_rating(HALF) == 2.5
    assert parse_rating("6.5 out of 9") == 6.5
    for text in (THREE, RANGE):
        with pytest.raises(ParseError, match="several"):
            parse_rating(text)
    with pytest.raises(ParseError, match="no rating"):
        parse_rating(PROSE)
    with pytest.raises(ParseError):
        parse_rating("score 0.6")


@pytest.mark.parametrize("text,midi", [
    ("33", 33), ("A440 (A4)", 69), ("A4: 69", 69), ("The pitch of the given audio is A1.", 33), ("C#3", 49),
])
def test_real_pitch_answers(text, midi):
    assert parse_midi_pitch(text) == midi


@pytest.mark.parametrize("text", [
    "33, 77, 69", "The lowest pitch in the audio is 9 (1 octave below A_0, 13.75Hz).", "The given audio is a high pitched note.",
])
def test_ambiguous_or_missing_pitch(text):
    with pytest.raises(ParseError):
        parse_midi_pitch(text)


def test_note_names_match_pretty_midi():
    import pretty_midi

    for name in ("C-1", "A0", "C4", "F#5", "Bb7", "B8"):
        assert note_name_to_midi(name) == pretty_midi.note_name_to_number(name)
