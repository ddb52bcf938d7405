"""Scoring of the CMI-Bench development branch's tasks (``evaluate.py`` at nicolaus625/CMI-bench@35235cb):
Arab-Andalusian accuracy, Lyra dance accuracy, Lyra label-set F1 and SongFormBench structure scores,
each in the toolkit's rule (``compat``) and the corrected one, against hand-computed values or the
reference implementations (scikit-learn, mir_eval). References are real rows of the stored files
(fixtures/mir/instructions/development); the answers are written here."""
from __future__ import annotations

import json
from pathlib import Path

import mir_eval
import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score

from musiceval.parsers.sections import read_sections, to_intervals
from musiceval.protocols.mir.metrics.label_sets import item_f1, label_set_scores, micro_f1, summary
from musiceval.protocols.mir.metrics.structure import METRICS, structure_scores
from musiceval.protocols.mir.metrics.tasks import TaskError, score_task
from musiceval.schemas import OutputRecord

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mir" / "instructions" / "development"


def _records(task: str, responses: list[str]) -> list[OutputRecord]:
    """The test rows of the task's fixture, answered with ``responses`` in order."""
    rows = [json.loads(line) for line in (FIXTURES / f"CMI_{task}.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if "test" in r["split"]]
    assert len(rows) == len(responses)
    return [OutputRecord(item_id=f"{k}|{r['audio_path'][0]}", index=k, question=r["instruction"], response=resp,
                         correct_answer=r["output"], audioid=r["audio_path"][0], group=r["audio_path"][0], other="")
            for k, (r, resp) in enumerate(zip(rows, responses))]


def _recs(pairs):
    return [OutputRecord(item_id=f"{k}|c{k}", index=k, question="q", response=resp, correct_answer=ref, audioid=f"c{k}",
                         group=f"c{k}", other="") for k, (resp, ref) in enumerate(pairs)]


# --- Arab-Andalusian -------------------------------------------------------------------------------

FORM_ANSWERS = ["Al-Mashaliyah",           # right either way: diacritics folded
                "al-mashālīyah, tawshīt al-nūbah, inshād",  # the toolkit: reference is a substring; default: three named
                "mashālīyah",              # reference al-mashālīyah: nested name, wrong either way
                "tawshīt al-nūbah ( bi-al-qawli)"]  # reference tawshīt al-nūbah: a substring, not the label


def test_arab_andalusian_accuracy_by_hand():
    recs = _records("ArabAndalusian_form", FORM_ANSWERS)
    assert [r.correct_answer for r in recs] == ["al-mashālīyah", "tawshīt al-nūbah", "al-mashālīyah", "tawshīt al-nūbah"]
    toolkit = score_task("ArabAndalusian_form", recs, compat="cmi-bench")
    assert toolkit.per_item["accuracy"].values.tolist() == [1, 1, 0, 1] and toolkit.metrics["accuracy"] == 0.75
    fixed = score_task("ArabAndalusian_form", recs)
    assert fixed.per_item["accuracy"].values.tolist() == [1, 0, 0, 0] and fixed.metrics["accuracy"] == 0.25
    assert [f.item_id for f in fixed.failures] == [recs[1].item_id]
    assert "several labels named" in fixed.failures[0].reason
    assert fixed.baseline_metrics["accuracy"] == 0.5  # two of four sections are the majority form


def test_the_toolkit_counts_an_answer_that_lists_every_name():
    # andalusian_multiclass_acc checks the reference alone: the whole list scores 1 on every item
    recs = _records("ArabAndalusian_mizan", [", ".join(["basīṭ", "bidūn", "thunā’ī"])] * 4)
    assert score_task("ArabAndalusian_mizan", recs, compat="cmi-bench").metrics["accuracy"] == 1.0
    assert score_task("ArabAndalusian_mizan", recs).metrics["accuracy"] == 0.0


def test_a_hamza_or_ayn_written_otherwise_still_names_the_label():
    recs = _records("ArabAndalusian_mizan", ["bidun", "Basit", "basīṭ", "thuna'i"])  # references: bidūn, basīṭ, bidūn, thunā’ī
    assert score_task("ArabAndalusian_mizan", recs).per_item["accuracy"].values.tolist() == [1, 1, 0, 1]


# --- Lyra dance ---------------------------------------------------------------------------------------


def test_lyra_dance_reads_yes_and_no_as_words_not_substrings():
    recs = _records("Lyra_dance", ["No.", "Yes, but it is not fast.", "I know it is.", "no"])
    assert [r.correct_answer for r in recs] == ["no", "yes", "yes", "no"]
    # lyra_dance_acc: "not" holds "no", so the second is no "yes"; "I know" holds "no", a wrong "no"
    assert score_task("Lyra_dance", recs, compat="cmi-bench").per_item["accuracy"].values.tolist() == [1, 0, 0, 1]
    fixed = score_task("Lyra_dance", recs)
    assert fixed.per_item["accuracy"].values.tolist() == [1, 1, 0, 1]
    assert [f.item_id for f in fixed.failures] == [recs[2].item_id]


# --- Lyra label sets ----------------------------------------------------------------------------------

PLACE_ANSWERS = ["Aegean-sea, Icaria", "Corfu and the Ionian sea", "East-Crete, Macedonia", "Serres"]


def test_lyra_place_f1_by_hand():
    recs = _records("Lyra_place", PLACE_ANSWERS)
    assert [r.correct_answer for r in recs] == ["Aegean-sea, Icaria", "Ionian-sea, Corfu", "Macedonia, Serres", ""]
    fixed = score_task("Lyra_place", recs)
    # item 2: "Ionian sea" names Ionian-sea (a space for the hyphen); item 3: East-Crete is a false positive;
    # item 4: Serres where no place is given: a false positive
    assert fixed.metrics["micro_f1"] == pytest.approx(2 * 5 / (2 * 5 + 2 + 1))
    assert fixed.per_item["item_f1"].values.tolist() == pytest.approx([1, 1, 2 * 1 / (2 + 2), 0])
    assert fixed.metrics["exact_match"] == 0.5
    # macro over the six places some reference holds: Serres 0, the others 1
    assert fixed.metrics["macro_f1"] == pytest.approx(5 / 6)
    toolkit = score_task("Lyra_place", recs, compat="cmi-bench")
    # the toolkit: "Ionian sea" normalises to "ioniansea" (named); East-Crete is no label of the references
    # (not counted); Serres on item 4 is a false positive of a referenced label
    assert toolkit.metrics["micro_f1"] == pytest.approx(2 * 5 / (2 * 5 + 1 + 1))
    assert toolkit.metrics["exact_match"] == 0.5


def test_label_set_metrics_equal_scikit_learn():
    rng = np.random.default_rng(7)
    truth, pred = rng.random((40, 9)) < 0.3, rng.random((40, 9)) < 0.3
    truth[:, 4] = False  # a label no reference holds
    held = truth.any(0)
    got = summary(truth, pred, held)
    assert got["micro_f1"] == pytest.approx(f1_score(truth, pred, average="micro"))
    assert got["macro_f1"] == pytest.approx(f1_score(truth[:, held], pred[:, held], average="macro", zero_division=0))
    assert got["exact_match"] == pytest.approx(accuracy_score(truth, pred))
    truth[3], pred[3] = False, False  # an item with no label, none named: a perfect answer
    assert item_f1(truth, pred).mean() == pytest.approx(f1_score(truth, pred, average="samples", zero_division=1))
    assert micro_f1(np.zeros((2, 3)), np.zeros((2, 3))) == 0.0


def test_the_toolkit_label_list_is_the_references_and_names_by_substring():
    recs = _recs([("Double bass, Violin", "Bass, Violin"), ("Lyra", "Voice")])
    out = label_set_scores("Lyra_instrument", recs, "cmi-bench", ())
    assert sorted(out["per_label_f1"]) == ["bass", "violin", "voice"]  # the references' labels, normalised
    assert out["metrics"]["micro_f1"] == pytest.approx(2 * 2 / (2 * 2 + 0 + 1))  # "doublebass" holds "bass"
    fixed = label_set_scores("Lyra_instrument", recs, None, ("Bass", "Violin", "Voice", "Lyra"))
    # "Double bass" names Bass as a word; Lyra, a label of the instruction, is a false positive
    assert fixed["metrics"]["micro_f1"] == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))


# --- SongFormBench ------------------------------------------------------------------------------------


def _reference_scores(ref_text: str, est: list) -> dict[str, float]:
    """mir_eval on intervals written out by hand from the reference text (what the task should compute)."""
    ref = [(float(s), float(e), lab) for s, e, lab in eval(ref_text)]  # the fixture's reference literal
    ref_iv = np.array([[s, e] for s, e, _ in ref])
    ref_lab = [lab for _, _, lab in ref]
    est_iv = np.array([[s, e] for s, e, _ in est])
    est_lab = [lab for _, _, lab in est]
    r2e, e2r = mir_eval.segment.deviation(ref_iv, est_iv, trim=True)
    return {"boundary_f1_05s": mir_eval.segment.detection(ref_iv, est_iv, window=0.5, trim=True)[2],
            "boundary_f1_3s": mir_eval.segment.detection(ref_iv, est_iv, window=3.0, trim=True)[2],
            "pairwise_f1": mir_eval.segment.pairwise(ref_iv, ref_lab, est_iv, est_lab)[2],
            "rand_index": mir_eval.segment.rand_index(ref_iv, ref_lab, est_iv, est_lab),
            "ari": mir_eval.segment.ari(ref_iv, ref_lab, est_iv, est_lab), "deviation_ref_to_est": r2e,
            "deviation_est_to_ref": e2r}


RUDEBOY_ANSWER = ("Here it is: [(0, 11.5, 'Intro'), (11.5, 33, 'Chorus 1'), (33, 56, 'Verse'), (56, 66, 'Pre chorus'), "
                  "(66, 90, 'Refrain'), (90, 110, 'Bridge'), (110, 132.4138, 'Chorus')]")


def test_song_structure_equals_mir_eval_on_the_intervals():
    recs = _records("SongFormBench", ["[]", "garbled", RUDEBOY_ANSWER])
    est = [(0.0, 11.5, "intro"), (11.5, 33.0, "chorus"), (33.0, 56.0, "verse"), (56.0, 66.0, "pre-chorus"),
           (66.0, 90.0, "chorus"), (90.0, 110.0, "bridge"), (110.0, 132.4138, "chorus")]
    assert read_sections(RUDEBOY_ANSWER) == est
    want = _reference_scores(recs[2].correct_answer, est)
    assert structure_scores(read_sections(recs[2].correct_answer), est) == pytest.approx(want)
    res = score_task("SongFormBench", recs)
    assert [v for v in res.per_item["pairwise_f1"].values] == pytest.approx(
        [res.baseline["pairwise_f1"].values[0], res.baseline["pairwise_f1"].values[1], want["pairwise_f1"]])
    assert res.per_item["deviation_ref_to_est"].ids == (recs[2].item_id,)  # undefined for the unread answers
    assert res.metrics["deviation_ref_to_est"] == pytest.approx(want["deviation_ref_to_est"])
    assert len(res.failures) == 2 and any("left out of the deviation means" in n for n in res.notes)
    toolkit = score_task("SongFormBench", recs, compat="cmi-bench")
    for m in METRICS:  # the toolkit scores an unreadable answer 0 on every metric, deviations included
        assert toolkit.metrics[m] == pytest.approx(want[m] / 3)


def test_an_estimate_outside_the_reference_span_is_clipped_and_gaps_are_unknown():
    ref = [(10.0, 20.0, "verse"), (20.0, 40.0, "chorus")]
    iv, labels = to_intervals([(0.0, 15.0, "intro"), (25.0, 60.0, "outro")], 10.0, 40.0)
    assert iv.tolist() == [[10.0, 15.0], [15.0, 25.0], [25.0, 40.0]] and labels == ["intro", "unknown", "outro"]
    assert structure_scores(ref, [(0.0, 15.0, "intro"), (25.0, 60.0, "outro")])["boundary_f1_3s"] == 0.0


def test_unreadable_references_leave_the_item_out_or_stop_the_task():
    ref = "[('0.0', '10.0', 'intro'), ('10.0', '30.0', 'verse')]"
    res = score_task("SongFormBench", _recs([(ref, ref), (ref, "no sections here")]))
    assert res.per_item["boundary_f1_3s"].n == 1 and "item left out" in res.failures[0].reason
    toolkit = score_task("SongFormBench", _recs([(ref, ref), (ref, "no sections here")]), compat="cmi-bench")
    assert toolkit.metrics["boundary_f1_3s"] == 0.5  # the toolkit keeps it, scored 0
    with pytest.raises(TaskError, match="readable as \\(start, end, label\\) sections"):
        score_task("SongFormBench", _recs([(ref, "nothing"), (ref, "")]))


@pytest.mark.parametrize("answer, sections", [
    ("[{'start': '0:05', 'end': '0:20', 'label': 'Instrumental'}]", [(5.0, 20.0, "inst")]),
    ("{'segments': [[0, 5, 'silent'], [5, '12s', 'Post-Chorus']]}", [(0.0, 5.0, "silence"), (5.0, 12.0, "chorus")]),
    ("(0.0, 12.5, intro)\n(12.5, 30, verse)", [(0.0, 12.5, "intro"), (12.5, 30.0, "verse")]),
    ("0.0, 12.5 and 12.5, 30", [(0.0, 12.5, "unknown"), (12.5, 30.0, "unknown")]),
    ("[0 - 12] Intro, [12 - 30] Hook", [(0.0, 12.0, "intro"), (12.0, 30.0, "unknown")]),
    ("[(0, 'inf', 'intro'), (0, 10, 'verse')]", [(0.0, 10.0, "verse")]),
    ("[" * 5000 + "]" * 5000, []),
    ("", []),
])
def test_section_answers_are_read_as_the_toolkit_reads_them(answer, sections):
    assert read_sections(answer) == sections


def test_a_label_set_item_f1_is_named_in_its_own_unit_not_guzhengs_frame_f1(tmp_path):
    """``item_f1`` means a label set's F1 in Lyra's tasks and a frame F1 in Guzheng_Tech's: the
    report's unit follows the task's family."""
    from musiceval.protocols import load_protocol

    rows = [{"question": "Which genres?", "response": r, "correct_answer": ref, "audioid": f"c{k}.wav", "other": ""}
            for k, (r, ref) in enumerate([("rock", "rock"), ("jazz", "rock, jazz"), ("pop", "blues"), ("rock", "rock")])]
    path = tmp_path / "model_Lyra_genre.jsonl"
    path.write_text(json.dumps(rows), "utf-8")
    run = load_protocol("mir", path)
    assert run.metric_info("item_f1").unit == "per-item label-set F1 (0-1)"
    from musiceval.protocols.mir.protocol import UNITS

    assert UNITS["item_f1"] == "per-item frame F1 (0-1)"  # Guzheng_Tech's, unchanged
