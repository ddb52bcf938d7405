"""Task-level scoring (parse + metric) on the shipped fixture slices and synthetic records."""
from pathlib import Path

import numpy as np
import pytest

from musiceval.data.cmibench import OutputRecord, load_outputs
from musiceval.protocols.mir.metrics.development_branch import BUILDERS
from musiceval.protocols.mir.metrics.tasks import FAMILIES, TaskError, score_task

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "mir" / "outputs"


def _load(model, task):
    return load_outputs(FIX / model / f"{model}_{task}.jsonl").records


def _rec(i, response, answer, question=""):
    return OutputRecord(item_id=f"{i}|x{i}", index=i, question=question, response=response,
                        correct_answer=answer, audioid=f"data/x{i}", group=f"x{i}")

DEVELOPMENT_FAMILIES = tuple(BUILDERS)


def bag_of_words_embed(texts):
    """A deterministic stand-in encoder for unit tests: hashed bag of character trigrams."""
    out = np.zeros((len(texts), 256), dtype=np.float32)
    for i, t in enumerate(texts):
        t = f"  {t.lower()}  "
        for j in range(len(t) - 2):
            out[i, hash(t[j : j + 3]) % 256] += 1.0
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


@pytest.mark.parametrize("compat", [None, "cmi-bench"])
# the development branch's tasks have no upstream outputs: tests/metrics/test_mir_development.py scores them
@pytest.mark.parametrize("task", sorted(t for t, f in FAMILIES.items()
                                        if f not in ("tagging", "captioning", "melody", *DEVELOPMENT_FAMILIES)))
def test_every_task_scores_its_fixture(task, compat):
    if task == "MedleyDB":
        pytest.skip("no real MedleyDB outputs shipped")
    if task == "EMO_valence" and compat is None:
        with pytest.raises(TaskError, match="AROUSAL"):
            score_task(task, _load("mullama", task), compat=compat)
        return
    res = score_task(task, _load("mullama", task), compat=compat)
    assert res.n == len(_load("mullama", task))
    assert all(np.isfinite(v) for v in res.metrics.values())
    for scores in res.per_item.values():
        assert scores.n > 0
    assert res.baseline_metrics


def test_mullama_gtzan_per_label_breakdown():
    res = score_task("GTZAN", _load("mullama", "GTZAN"))
    per = res.breakdown["per_label"]
    assert set(per) <= {"blues", "classical", "country", "disco", "hiphop", "jazz", "metal", "pop", "reggae", "rock"}
    assert sum(v["n"] for v in per.values()) == res.n


def test_compat_classification_is_the_toolkit_rule_by_hand():
    recs = [_rec(0, "trillo", "trillo"), _rec(1, "I think it's vibrato", "vibrato"), _rec(2, "belt or vibrato", "belt"),
            _rec(3, "trill", "trill")]
    assert score_task("VocalSet_tech", recs, compat="cmi-bench").metrics["accuracy"] == pytest.approx(2 / 4)
    default = score_task("VocalSet_tech", recs)
    assert default.metrics["accuracy"] == pytest.approx(3 / 4)
    assert len(default.failures) == 1 and "several labels" in default.failures[0].reason


def test_nsynth_pitch_default_reads_note_names():
    recs = [_rec(0, "A440 (A4)", "69"), _rec(1, "110", "110"), _rec(2, "33, 77, 69", "33"), _rec(3, "10", "10")]
    assert score_task("Nsynth_pitch", recs).metrics["accuracy"] == pytest.approx(3 / 4)
    # toolkit: "110" contains the labels "10" and "11"... only when they occur in the file
    assert score_task("Nsynth_pitch", recs, compat="cmi-bench").metrics["accuracy"] == pytest.approx(1 / 4)


def test_regression_by_hand():
    refs = [-1.0, -0.5, 0.0, 0.5, 1.0]
    resp = ["score 2", "3", "no idea", "6", "8.5"]
    recs = [_rec(i, r, str(y)) for i, (r, y) in enumerate(zip(resp, refs))]
    res = score_task("EMO_arousal", recs)
    parsed = np.array([2, 3, 6, 8.5])
    z = [(2 - parsed.mean()) / parsed.std(), (3 - parsed.mean()) / parsed.std(), 0.0,
         (6 - parsed.mean()) / parsed.std(), (8.5 - parsed.mean()) / parsed.std()]
    from sklearn.metrics import r2_score

    assert res.metrics["r2"] == pytest.approx(r2_score(refs, z))
    assert len(res.failures) == 1 and "imputed" in res.failures[0].reason
    assert res.baseline_metrics["r2"] == pytest.approx(0.0, abs=1e-12)


def test_beats_compat_zeroes_items_the_toolkit_cannot_parse():
    ref = "0.5s,1.0s,1.5s,2.0s"
    recs = [_rec(0, "0.5s, 1.0s, 1.5s, 2.0s", ref), _rec(1, "0.5s-1.0s, 1.5s-2.0s", ref), _rec(2, "The beats are at 0.5s, 1.0s, 1.5s, 2.0s.", ref)]
    cmi = score_task("gtzan_beat", recs, compat="cmi-bench")
    np.testing.assert_allclose(cmi.per_item["f_measure"].values, [1.0, 0.0, 0.0])  # "2.0." crashes float()
    default = score_task("gtzan_beat", recs)
    np.testing.assert_allclose(default.per_item["f_measure"].values, [1.0, 2 / 3, 1.0])
    assert default.baseline_metrics["tempo_bpm"] == pytest.approx(120)


def test_lyrics_by_hand():
    recs = [_rec(0, "The lyrics of the song are: some days I'm rich", "SOME DAYS I'M RICH"),
            _rec(1, "go " * 200, "GO HOME")]
    res = score_task("DSing", recs)
    assert res.per_item["wer"].values[0] == 0.0
    assert res.per_item["wer"].values[1] == pytest.approx(199 / 2)
    assert res.metrics["wer"] > 1


def test_guzheng_compat_swaps_macro_and_micro():
    ref = "[('0.0', '5.0', 'Vibrato')]"  # the toolkit's head reads only the first tuple
    recs = [_rec(0, "[('0.0', '5.0', 'Vibrato')]", ref), _rec(1, "no techniques", ref)]
    default = score_task("Guzheng_Tech", recs)
    cmi = score_task("Guzheng_Tech", recs, compat="cmi-bench")
    assert default.metrics["micro_f1"] == pytest.approx(cmi.metrics["macro_f1"])
    assert default.metrics["macro_f1"] == pytest.approx(cmi.metrics["micro_f1"])
    # pooled: TP 500, FP 0, FN 500 -> micro F1 = 1000 / 1500; macro: vibrato 2/3, others 0
    assert default.metrics["micro_f1"] == pytest.approx(2 / 3)
    assert default.metrics["macro_f1"] == pytest.approx((2 / 3) / 7)
    # the answer without brackets is "No Tech" at the toolkit's head: listed, not a crash
    assert [f.item_id for f in cmi.failures] == [recs[1].item_id]


def test_melody_synthetic_records():
    ref = "[(0.0, 'A4'), (0.5, 'A4'), (1.0, 'C5'), (1.5, '')]"
    recs = [_rec(0, ref, ref), _rec(1, "I cannot hear a melody", ref)]
    res = score_task("MedleyDB", recs)
    assert res.per_item["overall_accuracy"].values[0] == pytest.approx(1.0)
    assert res.per_item["overall_accuracy"].values[1] == 0.0 and len(res.failures) == 1
    assert score_task("MedleyDB", recs, compat="cmi-bench").metrics["overall_accuracy"] == pytest.approx(0.5)


@pytest.mark.parametrize("compat", [None, "cmi-bench"])
def test_tagging_fixture_with_stand_in_encoder(compat):
    res = score_task("MTT", _load("ltu", "MTT"), compat=compat, embed=bag_of_words_embed)
    assert 0.0 <= res.metrics["roc_auc"] <= 1.0 and 0.0 <= res.metrics["pr_auc"] <= 1.0
    assert res.breakdown["per_tag"]


def test_mtg_top50tags_synthetic_records():
    recs = [_rec(0, "electronic dance music with synthesizer", "electronic, dance, synthesizer"),
            _rec(1, "a calm piano piece", "piano, relaxing"), _rec(2, "rock with electric guitar", "rock, electricguitar")]
    res = score_task("MTG_top50tags", recs, embed=bag_of_words_embed)
    assert res.metrics["roc_auc"] > 0.5
    assert "electronic" in res.breakdown["per_tag"]


def test_tagging_without_encoder_is_a_task_error():
    with pytest.raises(TaskError, match="encoder"):
        score_task("MTT", [_rec(0, "x", "rock")])


def test_captioning_fixture_both_modes():
    recs = _load("mullama", "SDD")[:40]
    default = score_task("SDD", recs)
    assert set(default.metrics) == {"bleu", "bleu4", "meteor", "rouge_l", "cider"}
    cmi = score_task("SDD", recs, compat="cmi-bench")
    assert set(cmi.metrics) == {"bleu", "bleu4", "meteor", "rouge_l"}
    # character-level BLEU is much larger than word-level BLEU on the same captions
    assert cmi.metrics["bleu"] > default.metrics["bleu"]


def test_captioning_compat_equals_nltk_and_rouge_score():
    from nltk.translate.bleu_score import sentence_bleu
    from rouge_score import rouge_scorer

    ref, cand = "a calm acoustic guitar solo", "calm guitar music"
    res = score_task("SDD", [_rec(0, cand, ref)], compat="cmi-bench")
    assert res.metrics["bleu"] == pytest.approx(sentence_bleu([ref], cand))
    rl = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True).score(ref, cand)["rougeL"].recall
    assert res.metrics["rouge_l"] == pytest.approx(rl)


def test_unknown_task_and_mode():
    with pytest.raises(ValueError):
        score_task("Nope", [_rec(0, "x", "y")])
    with pytest.raises(ValueError):
        score_task("GTZAN", [_rec(0, "x", "y")], compat="other")


@pytest.mark.parametrize("bad", ["12345", "Infinity", "C\u200b major", ""])
def test_one_unreadable_reference_key_is_a_per_item_failure_not_a_task_error(bad):
    """GS_key: the majority baseline used to raise on one bad reference and stop the file."""
    recs = [_rec(0, "C major", "C major"), _rec(1, "A minor", "A minor"), _rec(2, "C major", bad), _rec(3, "G major", "C major")]
    res = score_task("GS_key", recs)
    assert res.n == 4 and [f.item_id for f in res.failures] == ["2|x2"]
    assert res.per_item["weighted_score"].ids == ("0|x0", "1|x1", "3|x3")
    assert res.baseline["weighted_score"].ids == ("0|x0", "1|x1", "3|x3")
    # model: 1, 1, G vs C major (fifth: 0.5); majority 'C major': 1, 0 (A minor is C major's relative: 0.3), 1
    assert res.metrics["weighted_score"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert res.baseline_metrics["weighted_score"] == pytest.approx((1 + 0.3 + 1) / 3)
