"""Beat-time parsing on real MU-LLaMA / LTU answers (loops, ranges, prose) and m:ss times."""
import numpy as np
import pytest

from musiceval.parsers import ParseError
from musiceval.parsers.times import parse_times, parse_times_cmi

# real MU-LLaMA gtzan_beat answer: loops "x.0ss, x.54s" far past the 30 s clip until cut off
LOOP = "The timestamps of all beats in this audio track are as follows: " + ", ".join(
    f"{k}.0ss, {k}.54s" for k in range(69)
) + ", 68.5"
# real LTU answers
RANGES = ("This audio clip contains music, with a full, bright, and complex sound. The timestamps of all beats are: "
          "0.0s-0.54s, 1.0s-1.6s, 1.7s-2.2s, 2.3s-2.8s, 9.5s-10.0s.")
COUNT = "The audio track has 16 beats in total."
DOWNBEAT = "The downbeat is at 0.0s, 0.54s, 1.0ss, 1.54s, and 2.0ss."
REFERENCE = "0.15s,1.1s,2.08s,3.07s,4.02s"


def test_reference_format():
    np.testing.assert_allclose(parse_times(REFERENCE), [0.15, 1.1, 2.08, 3.07, 4.02])
    np.testing.assert_allclose(parse_times_cmi(REFERENCE), [0.15, 1.1, 2.08, 3.07, 4.02])


def test_looping_answer_parses_whole_in_both_modes():
    default = parse_times(LOOP)
    assert default[0] == 0.0 and default[-1] == 68.54 and len(default) == 138
    cmi = parse_times_cmi(LOOP)  # the first piece starts with prose and is dropped
    assert cmi[0] == 0.54 and len(cmi) == 138


def test_ranges_give_onsets_by_default_and_crash_the_toolkit_rule():
    np.testing.assert_allclose(parse_times(RANGES), [0.0, 1.0, 1.7, 2.3, 9.5])
    with pytest.raises(ValueError):
        parse_times_cmi(RANGES)  # float("0.0-0.54") -> the toolkit scores the item 0


def test_count_in_prose_is_not_a_time():
    with pytest.raises(ParseError):
        parse_times(COUNT)
    assert parse_times_cmi(COUNT).size == 0


def test_trailing_and_is_dropped_by_the_toolkit_but_read_by_default():
    np.testing.assert_allclose(parse_times(DOWNBEAT), [0.0, 0.54, 1.0, 1.54, 2.0])
    np.testing.assert_allclose(parse_times_cmi(DOWNBEAT), [0.54, 1.0, 1.54])


def test_minutes_seconds():
    np.testing.assert_allclose(parse_times("beats at 0:59.5, 1:00, 1:02.25"), [59.5, 60.0, 62.25])
    np.testing.assert_allclose(parse_times_cmi("0:59.5,1:00,1:"), [59.5, 60.0])


def test_times_beyond_mir_eval_limit_are_refused():
    with pytest.raises(ParseError, match="exceeds"):
        parse_times("1.0s, 99999.0s")


def test_unsorted_duplicates_are_sorted_and_deduplicated():
    np.testing.assert_allclose(parse_times("2.0s, 1.0s, 2.0s"), [1.0, 2.0])


@pytest.mark.parametrize("text", ["-0.5s, 1.0s, 1.5s", "beats at 0.5s,-1.0s", "\u22120.54s 1.0s"])
def test_a_negative_time_fails_the_item_instead_of_losing_its_sign(text):
    with pytest.raises(ParseError, match="negative time"):
        parse_times(text)


def test_a_range_is_not_a_negative_time():
    assert parse_times("0.0s-0.54s, 1.0s").tolist() == [0.0, 1.0]
