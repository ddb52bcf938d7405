"""Key parsing: the toolkit's get_pred rule and the corrected parser, on real GiantSteps answers."""
import pytest

from musiceval.parsers import ParseError
from musiceval.parsers.key import KEY_CLASSES, parse_key, parse_key_cmi

REAL_MULLAMA = "The given audio is in the key of C major."
REAL_LTU_CONCLUSION = "C major\n\n### Conclusion:\nThe audio clip is in the key of C major, which is the m"
REAL_LTU_REFUSAL = "This audio clip does not provide enough information to determine the musical key of the song."


@pytest.mark.parametrize("text", ["C major", REAL_MULLAMA, REAL_LTU_CONCLUSION])
def test_real_answers_parse_in_both_modes(text):
    assert parse_key_cmi(text) == "C major"
    assert parse_key(text) == "C major"


def test_refusal_is_no_key():
    assert parse_key_cmi(REAL_LTU_REFUSAL) is None
    with pytest.raises(ParseError, match="no key"):
        parse_key(REAL_LTU_REFUSAL)


def test_cmi_short_forms_and_sharps():
    assert parse_key_cmi("Am") == "A minor"
    assert parse_key_cmi("F#m") == "Gb minor"
    assert parse_key_cmi("C#") == "Db major"
    assert parse_key_cmi("E#") is None  # the toolkit raises KeyError and scores 0
    assert parse_key_cmi("") is None


def test_cmi_misses_sharp_keys_inside_prose_and_default_reads_them():
    text = "The key is F# minor."
    assert parse_key_cmi(text) is None  # only a leading sharp is mapped to a flat
    assert parse_key(text) == "Gb minor"


@pytest.mark.parametrize("text,key", [
    ("Bb major", "Bb major"), ("B flat minor", "Bb minor"), ("D♭ major", "Db major"),
    ("A-sharp minor", "Bb minor"), ("Em", "E minor"), ("G", "G major"), ("in the key of e minor", "E minor"),
])
def test_default_spellings(text, key):
    assert parse_key(text) == key


def test_default_rejects_two_distinct_keys():
    with pytest.raises(ParseError, match="several keys"):
        parse_key("Either C major or A minor.")


def test_key_classes_are_the_24_flat_spelled_keys():
    assert len(KEY_CLASSES) == 24 and "Db major" in KEY_CLASSES and "C# major" not in KEY_CLASSES
