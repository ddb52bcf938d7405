"""MIR metric functions against their reference implementations on fixed vectors."""
import numpy as np
import pytest

from musiceval.protocols.mir.metrics.beats import beat_scores, evenly_spaced_beats, median_tempo
from musiceval.protocols.mir.metrics.classification import accuracy_items, key_weighted_items, majority_predictions, per_label_accuracy
from musiceval.protocols.mir.metrics.lyrics import wer_cer
from musiceval.protocols.mir.metrics.regression import r2_items, standardise_predictions
from musiceval.protocols.mir.metrics.sequence import frame_counts, frame_f1, melody_overall_accuracy
from musiceval.protocols.mir.metrics.tagging import (constant_ranking_scores, macro_auc, most_common_response, per_item_auc,
                                          tag_frequency_ranking, tag_truth, tag_truth_cmi)

REF_BEATS = np.array([0.15, 1.1, 2.08, 3.07, 4.02, 5.0, 5.95, 6.9])
EST_BEATS = np.array([0.1, 1.12, 2.5, 3.05, 4.0, 6.0, 8.0])


def test_beat_scores_equal_mir_eval():
    import mir_eval

    got = beat_scores(REF_BEATS, EST_BEATS)
    assert got["f_measure"] == pytest.approx(mir_eval.beat.f_measure(REF_BEATS, EST_BEATS))
    _, cmlt, _, amlt = mir_eval.beat.continuity(REF_BEATS, EST_BEATS)
    assert got["cmlt"] == pytest.approx(cmlt) and got["amlt"] == pytest.approx(amlt)
    assert beat_scores(REF_BEATS, None) == {"f_measure": 0.0, "cmlt": 0.0, "amlt": 0.0}
    assert beat_scores(REF_BEATS, np.zeros(0))["f_measure"] == 0.0


def test_metronome_baseline():
    assert median_tempo([np.arange(0, 10, 0.5), np.arange(0, 10, 1.0), np.arange(0, 10, 0.5)]) == pytest.approx(120)
    np.testing.assert_allclose(evenly_spaced_beats(3.0, 60), [0, 1, 2, 3])
    with pytest.raises(ValueError):
        median_tempo([np.array([1.0])])


def test_accuracy_and_majority():
    refs = ["rock", "pop", "rock", "jazz"]
    np.testing.assert_array_equal(accuracy_items(refs, ["rock", None, "pop", "jazz"]), [1, 0, 0, 1])
    assert majority_predictions(refs) == ["rock"] * 4
    assert majority_predictions(["b", "a"]) == ["a", "a"]  # ties: first in sorted order
    assert per_label_accuracy(refs, [1, 0, 0, 1])["rock"] == {"n": 2, "score": 0.5}
    with pytest.raises(ValueError):
        accuracy_items(refs, ["rock"])


def test_key_weighted_score_equals_mir_eval():
    import mir_eval

    refs = ["C major", "A minor", "D major", "Eb minor", "G major"]
    preds = ["C major", "C major", "A major", None, "G minor"]
    expected = [mir_eval.key.weighted_score(r, p) if p else 0.0 for r, p in zip(refs, preds)]
    np.testing.assert_allclose(key_weighted_items(refs, preds), expected)
    np.testing.assert_allclose(expected, [1.0, 0.3, 0.5, 0.0, 0.2])


def test_r2_items_mean_equals_sklearn():
    from sklearn.metrics import r2_score

    y = np.array([-1.2, 0.3, 0.8, 1.5, -0.4, 0.0])
    p = np.array([-0.5, 0.1, 1.0, 0.7, 0.2, -0.3])
    assert r2_items(y, p).mean() == pytest.approx(r2_score(y, p))
    assert r2_items(y, np.full_like(y, y.mean())).mean() == pytest.approx(0.0)


def test_standardise_predictions_imputes_mean():
    z = standardise_predictions([2.0, None, 4.0, 6.0])
    vals = np.array([2.0, 4.0, 6.0])
    np.testing.assert_allclose(z, [(2 - 4) / vals.std(), 0.0, 0.0, (6 - 4) / vals.std()])
    with pytest.raises(ValueError, match="standard deviation"):
        standardise_predictions([5.0, 5.0, None])


def test_wer_cer_equal_jiwer_and_exceed_one_on_loops():
    import jiwer

    ref, hyp = "some days i'm rich", "some day i'm rich rich"
    assert wer_cer(ref, hyp) == (pytest.approx(jiwer.wer(ref, hyp)), pytest.approx(jiwer.cer(ref, hyp)))
    w, c = wer_cer("go home", "go " * 1000)
    assert w == pytest.approx(999 / 2) and c > 1
    assert wer_cer("go home", "") == (1.0, 1.0)
    with pytest.raises(ValueError, match="empty reference"):
        wer_cer("  ", "x")


def test_macro_auc_equals_sklearn_and_excludes_single_class_tags():
    from sklearn.metrics import average_precision_score, roc_auc_score

    y = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 0]])
    s = np.array([[0.9, 0.1, 0.3], [0.2, 0.8, 0.1], [0.6, 0.4, 0.2], [0.1, 0.5, 0.9]])
    out = macro_auc(y, s, ["a", "b", "c"])
    assert out["roc_auc"] == pytest.approx(roc_auc_score(y[:, :2], s[:, :2], average="macro"))
    assert out["pr_auc"] == pytest.approx(average_precision_score(y[:, :2], s[:, :2], average="macro"))
    assert out["excluded"] == ["c"]


def test_per_item_auc():
    y = np.array([[1, 0, 0], [0, 0, 0]])
    s = np.array([[0.5, 0.5, 0.1], [0.1, 0.2, 0.3]])
    got = per_item_auc(y, s)
    assert got[0] == pytest.approx(0.75) and np.isnan(got[1])


def test_per_item_auc_counts_every_pair_as_the_pairwise_rule_does():
    # the rank formula against the definition: every (true, false) pair, a tie 1/2, bit for bit,
    # with ties, rows with one class only, a NaN score and one ranking broadcast to every item
    def pairwise(y, s):
        out = np.full(y.shape[0], np.nan)
        for i in range(y.shape[0]):
            p, n = s[i, y[i]], s[i, ~y[i]]
            if p.size and n.size:
                out[i] = float(((p[:, None] - n[None, :] > 0) + 0.5 * (p[:, None] == n[None, :])).mean())
        return out

    rng = np.random.default_rng(0)
    for trial in range(200):
        n, t = rng.integers(1, 30), rng.integers(1, 60)
        y = rng.random((n, t)) < rng.random()
        s = np.round(rng.random((n, t)), rng.integers(0, 3))  # 0-2 decimals: many ties
        if trial % 5 == 0:
            s[rng.random((n, t)) < 0.05] = np.nan
        if trial % 7 == 0:
            s = np.broadcast_to(s[0], (n, t))
        np.testing.assert_array_equal(per_item_auc(y, s), pairwise(y, s))


def test_tag_truth_rules():
    tags = ["classic", "classical", "female", "male"]
    np.testing.assert_array_equal(tag_truth_cmi("classical, female", tags), [1, 1, 1, 1])  # substrings
    np.testing.assert_array_equal(tag_truth("classical, female", tags), [0, 1, 1, 0])
    np.testing.assert_array_equal(tag_truth("", tags), [0, 0, 0, 0])


def test_frame_f1_equals_sklearn():
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(0)
    t = rng.random((50, 7)) > 0.7
    p = rng.random((50, 7)) > 0.6
    p[:, 6] = False
    t[:, 6] = False  # a class with no support and no prediction: F1 0 (toolkit convention)
    out = frame_f1(frame_counts(t, p))
    assert out["micro_f1"] == pytest.approx(f1_score(t, p, average="micro"))
    assert out["macro_f1"] == pytest.approx(f1_score(t, p, average="macro", zero_division=0))


def test_melody_overall_accuracy_equals_mir_eval():
    import mir_eval

    rt = np.arange(0, 2, 0.01)
    rf = np.where(rt < 1, 440.0, 0.0)
    et = np.arange(0, 2, 0.01)
    ef = np.where(et < 1.5, 440.0 * 2 ** (10 / 1200), 0.0)
    expected = mir_eval.melody.evaluate(rt, rf, et, ef)["Overall Accuracy"]
    assert melody_overall_accuracy(rt, rf, et, ef) == pytest.approx(expected)
    assert 0.7 < expected < 0.8


def test_answer_blind_rankings_of_tagging():
    """The tag-frequency ranking (an oracle prior) and a constant response, scored per item like a model."""
    y = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 0], [1, 0, 1]])
    ranking = tag_frequency_ranking(y)
    assert ranking.tolist() == [3.0, 2.0, 1.0]
    # each item's AUC of the same ranking: item 2 holds only the second tag (ranked between the others)
    assert constant_ranking_scores(y, ranking).tolist() == [1.0, 1.0, 0.5, 0.5]
    assert constant_ranking_scores(y, ranking).tolist() == per_item_auc(y, np.tile(ranking, (4, 1))).tolist()
    # the most common response: ties broken by the text, never by the line order
    assert most_common_response(["b", "a", "b", "a", "c"]) == 1 and most_common_response(["a", "b", "a", "b"]) == 0
    with pytest.raises(ValueError, match="no responses"):
        most_common_response([])
