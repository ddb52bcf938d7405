"""The compat modes rule by rule on records that separate the toolkit's versions; every expected
value is worked out by hand from the rule's text (the comments), not from musiceval's output."""
import math
import subprocess
import sys
from pathlib import Path

import pytest

from musiceval.data.cmibench import OutputRecord
from musiceval.protocols.mir.metrics.tasks import score_task
from musiceval.protocols.mir.metrics.compat import COMPAT_MODES, TOOLKIT_VERSIONS, rating_reads_last

ROOT = Path(__file__).resolve().parents[2]


def _rec(i, response, answer):
    return OutputRecord(item_id=f"{i}|x{i}", index=i, question="", response=response, correct_answer=answer,
                        audioid=f"data/x{i}", group=f"x{i}")


def test_pinned_modes_name_the_commit_they_follow():
    assert COMPAT_MODES == (None, "cmi-bench", "cmi-bench@35235cb", "cmi-bench@2cafca5")
    for mode, commit in TOOLKIT_VERSIONS.items():
        assert len(commit) == 40 and mode == f"cmi-bench@{commit[:7]}"
    assert [m for m in COMPAT_MODES if m and rating_reads_last(m)] == ["cmi-bench@35235cb"]


def test_an_unknown_mode_is_refused_with_the_valid_ones():
    with pytest.raises(ValueError, match="cmi-bench, cmi-bench@35235cb, cmi-bench@2cafca5"):
        score_task("EMO_arousal", [_rec(0, "5", "0.1"), _rec(1, "6", "0.2")], compat="cmi-bench@head")


def test_the_cli_refuses_an_unknown_mode_with_the_valid_ones(tmp_path):
    path = tmp_path / "m_EMO_arousal.jsonl"
    path.write_text('[{"question": "q", "response": "5", "correct_answer": "0.1", "audioid": "a", "other": ""}]')
    proc = subprocess.run([sys.executable, "-m", "musiceval.cli", "score", "mir", "--format", "cmi-bench", str(path),
                           "--compat", "cmi-bench@head", "--json"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert "'cmi-bench', 'cmi-bench@35235cb', 'cmi-bench@2cafca5'" in proc.stderr


# R^2 when one answer holds several numbers. cal_r2: predictions p are z-scored with the mean and
# population std of the parsed ratings, then R^2 = 1 - sum (y - p)^2 / sum (y - mean y)^2.
#   first number (2cafca5, 39a9c9b): ratings 2, 5, 8 -> mean 5, std sqrt(6) -> p = -a, 0, a with
#     a = 3 / sqrt(6) = sqrt(1.5); the references are exactly -a, 0, a -> R^2 = 1
#   last number (35235cb): ratings 5, 5, 8 -> mean 6, std sqrt(2) -> p = -b, -b, 2b with b = 1/sqrt(2);
#     sum (y - p)^2 = (b - a)^2 + b^2 + (a - 2b)^2 = 2a^2 - 6ab + 6b^2 = 3 - 3 sqrt(3) + 3;
#     sum y^2 = 2a^2 = 3 -> R^2 = 1 - (6 - 3 sqrt(3)) / 3 = sqrt(3) - 1
SEVERAL = [("The scores are 2, 8, and 5.", -math.sqrt(1.5)), ("5", 0.0), ("8", math.sqrt(1.5))]


@pytest.mark.parametrize("compat,r2", [("cmi-bench", 1.0), ("cmi-bench@2cafca5", 1.0),
                                       ("cmi-bench@35235cb", math.sqrt(3) - 1)])
def test_r2_with_several_numbers_in_one_answer(compat, r2):
    recs = [_rec(i, text, repr(y)) for i, (text, y) in enumerate(SEVERAL)]
    assert score_task("EMO_arousal", recs, compat=compat).metrics["r2"] == pytest.approx(r2, abs=1e-12)


# "around 8 and 9", "8", "8": the first rule reads 8, 8, 8 -> std 0 -> cal_r2 at 35235cb makes every
# prediction 0 (2cafca5 raises); the last rule reads 9, 8, 8 -> mean 25/3, deviations 2/3, -1/3, -1/3,
# std sqrt(6/27) = sqrt(2)/3 -> p = sqrt(2), -1/sqrt(2), -1/sqrt(2). With exactly those references
# (mean 0, sum of squares 3): last -> R^2 = 1; first -> R^2 = 1 - 3/3 = 0.
AROUND = [("around 8 and 9", math.sqrt(2)), ("8", -1 / math.sqrt(2)), ("8", -1 / math.sqrt(2))]


@pytest.mark.parametrize("compat,r2", [("cmi-bench", 0.0), ("cmi-bench@35235cb", 1.0)])
def test_r2_around_8_and_9(compat, r2):
    recs = [_rec(i, text, repr(y)) for i, (text, y) in enumerate(AROUND)]
    assert score_task("EMO_arousal", recs, compat=compat).metrics["r2"] == pytest.approx(r2, abs=1e-12)


# "The score is 5.2.", "4", "6.4": two runs with "a.b" in the text read as a.b at every commit, so
# the ratings are 5.2, 4, 6.4 -> mean 5.2, deviations 0, -1.2, 1.2, std 1.2 * sqrt(2/3) ->
# p = 0, -sqrt(1.5), sqrt(1.5); with those references R^2 = 1 in every mode. (Read as 5, as the
# toolkit's comment "score is 5.2 -> 5" says, the mean would move and R^2 would fall below 1.)
POINT = [("The score is 5.2.", 0.0), ("4", -math.sqrt(1.5)), ("6.4", math.sqrt(1.5))]


@pytest.mark.parametrize("compat", ["cmi-bench", "cmi-bench@35235cb", "cmi-bench@2cafca5"])
def test_r2_reads_5_point_2_as_a_decimal(compat):
    recs = [_rec(i, text, repr(y)) for i, (text, y) in enumerate(POINT)]
    assert score_task("EMO_arousal", recs, compat=compat).metrics["r2"] == pytest.approx(1.0, abs=1e-12)


# Every answer reads 5: std 0. cal_r2 at 35235cb sets every prediction to 0, so with references
# -1, 0, 1: R^2 = 1 - (1 + 0 + 1) / (1 + 0 + 1) = 0. At 2cafca5 cal_r2 raised ValueError; a constant
# answer is the model's doing, so musiceval scores it as 35235cb does there too and says so in a note.
@pytest.mark.parametrize("compat", ["cmi-bench", "cmi-bench@35235cb", "cmi-bench@2cafca5"])
def test_r2_with_zero_std_is_zero_at_35235cb(compat):
    recs = [_rec(i, "5", y) for i, y in enumerate(["-1", "0", "1"])]
    res = score_task("EMO_arousal", recs, compat=compat)
    assert res.metrics["r2"] == pytest.approx(0.0, abs=1e-12)
    assert any("every parsed rating is 5" in n and "35235cb" in n for n in res.notes)
    assert ("2cafca5 raises" in " ".join(res.notes)) == (compat == "cmi-bench@2cafca5")


# References with mean not 0 tell the two rules apart: -1, 0, 2 (mean 1/3, population variance
# 14/9, SS_tot = 14/3). cal_r2's zeros: SS_res = 1 + 0 + 4 = 5, R^2 = 1 - 5 / (14/3) = -1/14.
# The corrected default scores the mean predictor: R^2 = 0 exactly, item by item the trivial baseline.
def test_r2_with_zero_std_and_off_centre_references():
    recs = [_rec(i, "5", y) for i, y in enumerate(["-1", "0", "2"])]
    for compat in ("cmi-bench", "cmi-bench@35235cb", "cmi-bench@2cafca5"):
        assert score_task("EMO_arousal", recs, compat=compat).metrics["r2"] == pytest.approx(-1 / 14, abs=1e-12)
    default = score_task("EMO_arousal", recs)
    assert default.metrics["r2"] == pytest.approx(0.0, abs=1e-12)
    assert default.per_item["r2"].values.tolist() == default.baseline["r2"].values.tolist()


# Guzheng, reference and answer both "[('0.0', '5.0', 'Vibrato'), ('5.0', '9.0', 'Plucks')]".
#   35235cb convert_to_frame_labels reads only the first tuple: Vibrato frames 0..500 on both sides
#     -> pooled TP only -> micro F1 1; per class Vibrato 1, the other six 0 -> macro 1/7.
#   2cafca5 reads the whole list (end % 10 leaves 5.0 and 9.0 as they are): Vibrato 0..500 and
#     Plucks 500..900 on both sides -> micro 1; macro (1 + 1) / 7 = 2/7.
#   evaluate.py prints calculate_frame_f1's (micro, macro) as (macro, micro) at both commits.
@pytest.mark.parametrize("compat,macro", [("cmi-bench", 1 / 7), ("cmi-bench@35235cb", 1 / 7),
                                          ("cmi-bench@2cafca5", 2 / 7)])
def test_guzheng_reads_the_first_tuple_or_the_whole_list(compat, macro):
    events = "[('0.0', '5.0', 'Vibrato'), ('5.0', '9.0', 'Plucks')]"
    res = score_task("Guzheng_Tech", [_rec(0, events, events)], compat=compat)
    assert res.metrics["macro_f1"] == pytest.approx(1.0)  # holds the micro F1 (the toolkit's swap)
    assert res.metrics["micro_f1"] == pytest.approx(macro)
