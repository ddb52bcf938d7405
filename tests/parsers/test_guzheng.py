"""Guzheng technique events and frames on real LTU answers."""
import numpy as np
import pytest

from musiceval.parsers import ParseError
from musiceval.parsers.guzheng import TECHNIQUES, events_to_frames, frames_cmi, frames_cmi_2cafca5, frames_cmi_explained, parse_events

# real LTU answer: the prompt's example, wrapped in quotes
QUOTED = "\"[('5.5035', '6.0724', 'Upward Portamento'), ('7.0708', '8.0809', 'Upward Portamento'), ('9.6947', '10.0', 'Upward Portamento')]\""
# real LTU answer echoing the instruction
ECHO = ("The output format should be a Python string representation of a list containing tuples of (start time second, "
        "end time second, technique). If no technique is detected, return [('start_time', 'end_time', 'No Technique')]. "
        "For example:\n\n\"[('0.0', '10.0', 'No Technique')]\"")
REFERENCE = "[('10.5598', '11.1168', 'Vibrato'), ('15.8513', '15.9441', 'Glissando')]"
PROSE = "The given audio does not contain any Guzheng (Chinese zither) playing techniques."


def test_quoted_list_parses_in_both_modes():
    ev = parse_events(QUOTED)
    assert ev[0] == (5.5035, 6.0724, "Upward Portamento") and len(ev) == 3
    f = frames_cmi_2cafca5(QUOTED)
    up = TECHNIQUES.index("Upward Portamento")
    # toolkit: 10.0 % 10 == 0, so the last event (9.6947 -> 10.0) sets no frame
    assert f is not None and f[:, up].sum() == 57 + 101
    assert events_to_frames(ev, offset=0.0)[:, up].sum() == 57 + 101 + 31


def test_reference_window_offset():
    frames = events_to_frames(parse_events(REFERENCE))
    v = TECHNIQUES.index("Vibrato")
    assert frames[56:112, v].all() and not frames[112:, v].any() and not frames[:56, v].any()  # rounded
    cmi = frames_cmi_2cafca5(REFERENCE)
    assert cmi is not None and cmi[55:111, v].all()  # int() truncates: 0.5598 s -> frame 55


def test_echoed_instruction_is_no_technique_by_default_and_crashes_the_toolkit_rule():
    assert parse_events(ECHO) == []
    assert frames_cmi_2cafca5(ECHO) is None  # float('start_time') raises in the toolkit


def test_prose_is_a_parse_failure():
    with pytest.raises(ParseError):
        parse_events(PROSE)
    assert frames_cmi_2cafca5(PROSE) is None


def test_edge_crossing_event_keeps_its_in_window_part():
    ev = parse_events("[('9.7591', '10.4321', 'Upward Portamento')]")
    up = TECHNIQUES.index("Upward Portamento")
    assert events_to_frames(ev, offset=0.0)[976:, up].all()
    assert frames_cmi_2cafca5("[('9.7591', '10.4321', 'Upward Portamento')]")[:, up].sum() == 0  # 9.76 -> 0.43


def test_dict_entries_and_cut_off_lists():
    ev = parse_events("[{'start': 1, 'end': 2, 'technique': 'Tremolo'}]")
    assert ev == [(1.0, 2.0, "Tremolo")]
    cut = "[('1.0', '2.0', 'Plucks'), ('3.0', '4.0', 'Vibrato'), ('5.0', '6"
    assert parse_events(cut) == [(1.0, 2.0, "Plucks"), (3.0, 4.0, "Vibrato")]


def test_unknown_technique_is_a_failure():
    with pytest.raises(ParseError, match="unknown technique"):
        parse_events("[('1.0', '2.0', 'Slap')]")


def test_frames_shape():
    assert events_to_frames([]).shape == (1000, 7)
    assert np.asarray(frames_cmi_2cafca5("[('0.0', '10.0', 'No Tech')]")).sum() == 0


# --- the toolkit's head (commit 35235cb): first tuple only, (end - 1e-4) % 10 + 1e-4, "No Tech" fallback


def test_head_reads_only_the_first_tuple_and_keeps_an_event_ending_at_10():
    up = TECHNIQUES.index("Upward Portamento")
    f = frames_cmi(QUOTED)  # first tuple only: 5.5035 -> 6.0724
    assert f is not None and f[:, up].sum() == 57 and f[550:607, up].all()
    last = frames_cmi("[('9.6947', '10.0', 'Upward Portamento')]")
    assert last[969:, up].all() and last[:, up].sum() == 31  # 2cafca5: 10.0 % 10 == 0, no frame
    assert frames_cmi_2cafca5("[('9.6947', '10.0', 'Upward Portamento')]")[:, up].sum() == 0


def test_head_turns_unreadable_answers_into_no_tech_with_a_reason():
    for text in (PROSE, ECHO, "[(1.0, 2.0, 'Vibrato')]", "[('x', 'y', 'Vibrato')]", "[)", "[(unquoted)]"):
        frames, why = frames_cmi_explained(text)
        assert frames is not None and frames.sum() == 0 and why, text
    frames, why = frames_cmi_explained("[('1.0', '2.0', 'Vibrato')]")
    assert why is None and frames[100:200, TECHNIQUES.index("Vibrato")].all()


def test_head_skips_unknown_techniques_and_raises_where_the_toolkit_does():
    assert frames_cmi("[('1.0', '2.0', 'Slap')]").sum() == 0
    assert frames_cmi_2cafca5("[('1.0', '2.0', 'Slap')]") is None
    # a dict entry with a missing key raises in the toolkit (outside its try blocks)
    assert frames_cmi("[{'start': 1, 'technique': 'Vibrato (soft)'}]") is not None  # cut at ")": unreadable -> No Tech
    assert frames_cmi("[{'start': 1, 'end': 2}, ('3.0', '4.0', 'Plucks')]") is None


def test_head_edge_crossing_event_wraps_like_the_toolkit():
    up = TECHNIQUES.index("Upward Portamento")
    f = frames_cmi("[('9.7591', '10.4321', 'Upward Portamento')]")  # 975 -> int(43.21) = 43: empty slice
    assert f[:, up].sum() == 0
    g = frames_cmi("[('10.5598', '11.1168', 'Vibrato')]")
    assert g[55:111, TECHNIQUES.index("Vibrato")].all() and g.sum() == 111 - 55
