"""What a MIR metric does where its textbook formula is undefined.

- A property of the model's answers (every EMO rating the same, none parsed) is scored: R^2 of
  predictions without spread is defined (docs/cmi-bench.md, row 6), never an error;
- a property of the references (fewer than two numeric ones, all equal, no tag with both classes,
  no readable Guzheng reference, two labels the toolkit cannot tell apart) refuses the task with a
  :class:`~musiceval.protocols.mir.metrics.tasks.TaskError` that names the input and the fix.

Expected values are worked out by hand in the comments.
"""
import numpy as np
import pytest

from musiceval.data.cmibench import OutputRecord
from musiceval.protocols.mir.metrics.tasks import TaskError, score_task
from musiceval.protocols.mir.metrics.regression import has_spread, r2_items, r2_standardised_items

MODES = [None, "cmi-bench", "cmi-bench@35235cb", "cmi-bench@2cafca5"]


def _rec(i, response, answer):
    return OutputRecord(item_id=f"{i}|x{i}", index=i, question="Estimate the arousal (1-9).", response=response,
                        correct_answer=answer, audioid=f"data/x{i}", group=f"x{i}")


def test_has_spread():
    assert has_spread([2.0, None, 4.0])
    assert not has_spread([5.0, 5.0, None])
    assert not has_spread([None, None])
    assert not has_spread([])


# References 1, 2, 6: mean 3, SS_tot = 4 + 1 + 9 = 14.
#   mean predictor: p = 3, 3, 3 -> SS_res = SS_tot -> R^2 = 0 exactly;
#   the toolkit's zeros: SS_res = 1 + 4 + 36 = 41 -> R^2 = 1 - 41/14 = -27/14.
@pytest.mark.parametrize("predictions", [[7, 7, 7], [7, None, 7], [None, None, None]])
def test_r2_of_predictions_without_spread(predictions):
    y = [1.0, 2.0, 6.0]
    default = r2_standardised_items(y, predictions)
    np.testing.assert_array_equal(default, r2_items(np.array(y), np.full(3, 3.0)))
    assert default.mean() == pytest.approx(0.0, abs=1e-12)
    assert r2_standardised_items(y, predictions, no_spread="zero").mean() == pytest.approx(-27 / 14)


def test_r2_with_spread_is_the_standardised_rule_in_both_modes():
    y, p = [1.0, 2.0, 6.0], [2.0, None, 8.0]
    z = np.array([-1.0, 0.0, 1.0])  # mean 5, population std 3
    for rule in ("mean-predictor", "zero"):
        np.testing.assert_allclose(r2_standardised_items(y, p, no_spread=rule), r2_items(np.array(y), z))
    with pytest.raises(ValueError, match="no_spread='median'"):
        r2_standardised_items(y, p, no_spread="median")


def test_a_constant_answer_scores_as_the_mean_predictor_by_default():
    refs = ["-0.9", "0.4", "1.3", "-0.2", "0.7"]
    res = score_task("EMO_arousal", [_rec(i, "The arousal is 5.", y) for i, y in enumerate(refs)])
    assert res.metrics["r2"] == pytest.approx(0.0, abs=1e-12)
    # item by item the trivial baseline: the paired gate "beats the mean predictor" FAILs exactly
    np.testing.assert_array_equal(res.per_item["r2"].values, res.baseline["r2"].values)
    assert not res.failures  # every answer was read: the parse rate is not what failed
    assert any("every parsed rating is 5" in n and "mean predictor" in n for n in res.notes)


@pytest.mark.parametrize("compat", MODES)
def test_unparseable_answers_everywhere_are_scored_not_raised(compat):
    res = score_task("EMO_arousal", [_rec(i, "I cannot tell.", y) for i, y in enumerate(["-1", "0", "1"])],
                     compat=compat)
    assert res.metrics["r2"] == pytest.approx(0.0, abs=1e-12)  # references of mean 0: both rules give 0
    assert len(res.failures) == 3 and any("no rating was parsed" in n for n in res.notes)


@pytest.mark.parametrize("compat", MODES)
@pytest.mark.parametrize("refs,match", [(["0.5", "n/a", "?"], "1 of 3 items have a numeric reference"),
                                        (["0.5", "0.5", "0.5"], "every reference .* is 0.5")])
def test_references_that_leave_r2_undefined_refuse_the_task(compat, refs, match):
    with pytest.raises(TaskError, match=match):
        score_task("EMO_arousal", [_rec(i, str(i + 2), y) for i, y in enumerate(refs)], compat=compat)


def test_tag_references_without_both_classes_refuse_the_task():
    recs = [_rec(i, "rock, guitar", "rock") for i in range(3)]  # "rock" on every item, no other tag anywhere
    with pytest.raises(TaskError, match="no tag of the task's .* has both a positive and a negative item"):
        score_task("MTT", recs, embed=lambda texts: np.eye(len(texts), 8, dtype=np.float32))


def test_a_constant_tagging_answer_is_scored():
    recs = [_rec(i, "rock", tag) for i, tag in enumerate(["rock", "jazz", "rock,guitar", "piano"])]
    embed = lambda texts: np.asarray([[1.0, float(len(t) % 3), float("o" in t)] for t in texts], dtype=np.float32)  # noqa: E731
    res = score_task("MTT", recs, embed=embed)
    assert res.metrics["roc_auc"] == pytest.approx(0.5)  # one response for every item: every tag column ties


@pytest.mark.parametrize("compat", [None, "cmi-bench@2cafca5"])  # 35235cb reads an unreadable reference as "No Tech"
def test_guzheng_without_a_readable_reference_refuses_the_task(compat):
    recs = [_rec(i, "[('0.0', '5.0', 'Vibrato')]", "no techniques here") for i in range(2)]
    with pytest.raises(TaskError, match="references .* readable"):
        score_task("Guzheng_Tech", recs, compat=compat)


def test_labels_the_toolkit_cannot_tell_apart_refuse_the_compat_task():
    recs = [_rec(0, "hip-hop", "hip-hop"), _rec(1, "hiphop", "hiphop"), _rec(2, "jazz", "jazz")]
    with pytest.raises(TaskError, match="'hip-hop', 'hiphop' normalise to the same string"):
        score_task("GTZAN", recs, compat="cmi-bench")
    assert score_task("GTZAN", recs).n == 3  # the corrected rules score the file
