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
    assert parse_rating_cmi(THREE) == 2  # the first number wins
    assert parse_rating_cmi(RANGE) == 5
    assert parse_rating_cmi(PROSE) is None
    assert parse_rating_cmi("score 0.6") == 6  # "0" is dropped, "6" kept: a toolkit quirk
    assert parse_rating_cmi("a 7 out of 9 on a 1-9 scale") == 7


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
