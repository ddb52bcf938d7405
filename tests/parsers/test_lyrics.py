"""Lyrics cleaning before WER/CER: toolkit prefix patterns vs. the anchored default."""
from musiceval.parsers.lyrics import clean_lyrics, clean_lyrics_cmi, strip_prefix, strip_prefix_cmi

REAL_REFUSAL = "The lyrics of the given song are not provided in the audio clip."


def test_cmi_cleaning_keeps_apostrophes_and_spells_numbers():
    assert clean_lyrics_cmi("SOME DAYS I'M RICH, 21!") == "some days i'm rich twenty-one"


def test_default_cleaning_splits_number_words_and_handles_unicode():
    assert clean_lyrics("Some days I\u2019m RICH,rich 21!") == "some days i'm rich rich twenty one"


def test_prefix_removed_at_the_start_only():
    text = "The lyrics of the song are: hold on, the words are: go"
    assert strip_prefix(text) == "hold on, the words are: go"
    assert strip_prefix_cmi("<s>The lyrics are: hello</s>") == "hello"


def test_toolkit_pattern_deletes_sung_words_before_a_later_colon():
    # the unanchored pattern eats everything up to the colon, including sung words
    sung = "my lyrics of love are all I have: baby"
    assert strip_prefix_cmi(sung) == "baby"


def test_refusal_is_kept_as_hypothesis():
    assert strip_prefix(REAL_REFUSAL) == REAL_REFUSAL
    assert clean_lyrics(REAL_REFUSAL).startswith("the lyrics of the given song")


def test_looping_response_survives():
    loop = "go " * 5000
    assert clean_lyrics(loop).count("go") == 5000
    assert clean_lyrics_cmi(loop).count("go") == 5000
