"""Melody tuples (MedleyDB): no real outputs are shipped, so these are synthetic answers in the
documented layout ``[(time, note), ...]``."""
import numpy as np
import pytest

from musiceval.parsers import ParseError
from musiceval.parsers.melody import parse_melody, parse_melody_cmi


def test_note_names_numbers_and_unvoiced():
    t, f = parse_melody("[(10.5, 'A4'), (10.0, 60), (11.0, ''), (10.5, 'C4')]")
    np.testing.assert_allclose(t, [0.0, 0.5, 1.0])  # shifted by 10 * floor(10.0 / 10); first entry per time kept
    np.testing.assert_allclose(f, [261.6255653, 440.0, 0.0])


def test_dict_layout_and_mss_times():
    t, f = parse_melody("[{'time': '0:01.5', 'MIDI_number': 69}, {'time': 2.0, 'MIDI_number': 'A5'}]")
    np.testing.assert_allclose(t, [1.5, 2.0])
    np.testing.assert_allclose(f, [440.0, 880.0])


def test_unclosed_list_and_trailing_punctuation():
    t, _ = parse_melody("[(0.1, 'C4'), (0.2, 'D4')")
    assert len(t) == 2
    t, _ = parse_melody("[(0.1, 'C4'), (0.2, 'D4')].")
    assert len(t) == 2


def test_unknown_note_default_fails_cmi_becomes_midi_zero():
    text = "[(0.1, 'do'), (0.2, 'C4')]"
    with pytest.raises(ParseError):
        parse_melody(text)
    _, f = parse_melody_cmi(text)
    assert f[0] == pytest.approx(8.1757989)


@pytest.mark.parametrize("text", ["", "no melody", "{'a': 1}", "[1, 2, 3]", "[(" * 5000])
def test_unreadable(text):
    with pytest.raises(ParseError):
        parse_melody(text)
    assert parse_melody_cmi(text) is None


def test_never_evaluates_code():
    with pytest.raises(ParseError):
        parse_melody("[(__import__('os').system('echo pwned'), 'C4')]")
