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


# --- the toolkit's head (process_midi_sequence @ 35235cb) versus the default rule

PM_HZ0 = 440.0 * 2 ** ((0 - 69) / 12)  # pretty_midi.note_number_to_hz(0) = 8.18 Hz


def test_unquoted_note_keeps_its_leading_space_in_compat_and_becomes_midi_zero():
    text = "[(0.5, D#4), (1.0, 60)]"  # a NameError for eval: the toolkit's regex branch
    t, f = parse_melody_cmi(text)
    np.testing.assert_allclose(t, [0.5, 1.0])
    np.testing.assert_allclose(f, [PM_HZ0, 261.6255653])  # " D#4" rejected, " 60" is a float
    _, g = parse_melody(text)
    np.testing.assert_allclose(g, [311.1269837, 261.6255653])


def test_reference_midi_zero_is_voiced_in_compat_and_unvoiced_by_default():
    ref = "[('0.0058', 0), ('0.0116', 69), ('0.0174', 0)]"  # the MedleyDB generator's layout
    np.testing.assert_allclose(parse_melody_cmi(ref)[1], [PM_HZ0, 440.0, PM_HZ0])
    np.testing.assert_allclose(parse_melody(ref)[1], [0.0, 440.0, 0.0])


def test_compat_reads_the_whole_text_so_prose_sends_quoted_notes_to_midi_zero():
    text = "The melody is [(0.5, 'A4'), (1.0, 'B4')]"
    _, f = parse_melody_cmi(text)  # SyntaxError -> regex groups "0.5", " 'A4'" -> not a note
    np.testing.assert_allclose(f, [PM_HZ0, PM_HZ0])
    np.testing.assert_allclose(parse_melody(text)[1], [440.0, 493.8833013])


@pytest.mark.parametrize("text", ["[(1, 'A4')]", "[(\"'0.5'\", 'A4')]", "[(0.5, 'A4'), (x)]"])
def test_compat_gives_up_where_the_toolkit_raises_or_returns_none(text):
    assert parse_melody_cmi(text) is None


def test_compat_repairs_like_the_toolkit():
    t, f = parse_melody_cmi("[(0.5, 'A4'), (1.0, 'B4'), (1.5, 'C")  # unterminated: cut at the last ")"
    np.testing.assert_allclose(t, [0.5, 1.0])
    t, _ = parse_melody_cmi("[(0.5, 'A4'), (1.0, 'B4')")  # '[' never closed
    assert len(t) == 2
    t, f = parse_melody_cmi("[{'time': 12.5, 'MIDI_number': 'A4'}]")
    np.testing.assert_allclose(t, [2.5]) and np.testing.assert_allclose(f, [440.0])


def test_pretty_midi_note_rule_matches_pretty_midi():
    pretty_midi = pytest.importorskip("pretty_midi")
    from musiceval.parsers.melody import note_name_to_number_pm

    for name in ["D#4", "d#4", "Db4", "C!0", "E#4", "Cb4", "B-1", "A+4", " D#4", "C", "H4", "", "D##4", "C4\n", "C 4"]:
        try:
            want = pretty_midi.note_name_to_number(name)
        except ValueError:
            with pytest.raises(ValueError):
                note_name_to_number_pm(name)
        else:
            assert note_name_to_number_pm(name) == want, name
