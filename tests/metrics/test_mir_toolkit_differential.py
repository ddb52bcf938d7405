"""The compat modes against transcriptions of the toolkit's ``evaluate.py`` at the commits they
follow (tests/metrics/toolkit_evaluate.py) on the real output files in
../shared/data/cmi-bench/outputs (or $MUSICEVAL_SHARED_DATA). ``cmi-bench`` and
``cmi-bench@35235cb`` share every rule but the rating's (first number versus last)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from musiceval.data.cmibench import load_outputs
from musiceval.protocols.mir.metrics.tasks import score_task
from tests.metrics import toolkit_evaluate as tk

OUTPUTS = tk.SHARED / "cmi-bench" / "outputs"
GUZHENG = sorted(OUTPUTS.glob("*/*Guzheng_Tech*.jsonl"))


@pytest.mark.skipif(not GUZHENG, reason=f"no *Guzheng_Tech* outputs under {OUTPUTS} (set MUSICEVAL_SHARED_DATA)")
@pytest.mark.parametrize("compat", ["cmi-bench", "cmi-bench@35235cb"])
@pytest.mark.parametrize("path", GUZHENG, ids=lambda p: p.name)
def test_guzheng_compat_equals_the_toolkit_at_35235cb_on_real_outputs(path, compat):
    raw = json.loads(path.read_text())
    marco, micro = tk.calculate_frame_f1(raw)  # the toolkit prints these as "Marco F1", "Micro F1"
    loaded = load_outputs(path)
    assert len(loaded.records) == len(raw) and not loaded.failures
    res = score_task("Guzheng_Tech", loaded.records, compat=compat)
    assert res.metrics["macro_f1"] == pytest.approx(marco, abs=1e-12)
    assert res.metrics["micro_f1"] == pytest.approx(micro, abs=1e-12)
    # every record is scored; the ones the toolkit reads as "No Tech" for want of a tuple are listed
    assert res.n == len(raw) and res.per_item["item_f1"].values.size == len(raw)
    no_tuple = sum(r["response"].find("[") == -1 or r["response"].find("[") >= r["response"].find(")") for r in raw)
    assert sum(f.reason.startswith("no '[' before a ')'") for f in res.failures) == no_tuple


@pytest.mark.skipif(not GUZHENG, reason=f"no *Guzheng_Tech* outputs under {OUTPUTS}")
def test_guzheng_35235cb_differs_from_the_2cafca5_rule_on_real_references():
    """Commits 35235cb and 2cafca5 disagree on at least one real file (first tuple vs whole list)."""
    diffs = []
    for path in GUZHENG:
        recs = load_outputs(path).records
        head = score_task("Guzheng_Tech", recs, compat="cmi-bench").metrics
        default = score_task("Guzheng_Tech", recs).metrics
        assert set(head) == set(default) == {"macro_f1", "micro_f1"}
        frames_differ = any(
            not np.array_equal(tk.convert_to_frame_labels(r.correct_answer), _old(r.correct_answer)) for r in recs)
        diffs.append(frames_differ)
    assert any(diffs)


def _old(text):
    from musiceval.parsers.guzheng import frames_cmi_2cafca5

    f = frames_cmi_2cafca5(text)
    return np.zeros((1000, 7)) if f is None else f


def _rec(i, response, answer):
    from musiceval.data.cmibench import OutputRecord

    return OutputRecord(item_id=str(i), index=i, question="", response=response, correct_answer=answer,
                        audioid=f"a{i}", group=f"a{i}")


def test_medleydb_synthetic_records_compat_versus_default():
    """Synthetic records in the generator's layout (time strings, MIDI ints, 0 = unvoiced)."""
    import mir_eval

    ref = "[('10.0000', 0), ('10.5000', 63), ('11.0000', 63), ('11.5000', 0)]"
    unquoted = "[(10.0, ''), (10.5, D#4), (11.0, D#4), (11.5, '')]"
    quoted = "[(10.0, 0), (10.5, 'D#4'), (11.0, 'D#4'), (11.5, 0)]"
    recs = [_rec(0, unquoted, ref), _rec(1, quoted, ref)]
    default = score_task("MedleyDB", recs).per_item["overall_accuracy"].values
    compat = score_task("MedleyDB", recs, compat="cmi-bench").per_item["overall_accuracy"].values
    # default: MIDI 0 unvoiced on both sides, both answers right
    np.testing.assert_allclose(default, [1.0, 1.0])
    t = np.array([0.0, 0.5, 1.0, 1.5])
    hz0 = 440.0 * 2 ** (-69 / 12)
    d4 = 440.0 * 2 ** ((63 - 69) / 12)

    def oa(ref_f, est_f):
        return mir_eval.melody.evaluate(t, np.array(ref_f), t, np.array(est_f))["Overall Accuracy"]

    # compat: the reference's MIDI 0 frames are voiced 8.18 Hz; unquoted " D#4" is MIDI 0 as well,
    # the regex branch also keeps " ''" (not the empty string), so those frames are 8.18 Hz too
    assert compat[0] == pytest.approx(oa([hz0, d4, d4, hz0], [hz0, hz0, hz0, hz0]))
    assert compat[1] == pytest.approx(oa([hz0, d4, d4, hz0], [hz0, d4, d4, hz0]))
    assert compat[0] < compat[1] and compat[0] < default[0]


# --- tagging at 35235cb: GTE (query prompt) and per-tag BERTScore recall

MTT = sorted(OUTPUTS.glob("*/*_MTT.jsonl"))


def _stand_in_embed(texts):
    """A stand-in encoder held fixed on both sides: hashed character-trigram *counts*. Left
    unnormalised on purpose: integer dot products are exact in float32, so the toolkit's ``* 100``
    merges or splits no tie and both sides rank identically."""
    import zlib

    out = np.zeros((len(texts), 256), dtype=np.float32)
    for i, t in enumerate(texts):
        t = f"  {t.lower()}  "
        for j in range(len(t) - 2):
            out[i, zlib.crc32(t[j : j + 3].encode()) % 256] += 1.0
    return out


@pytest.mark.skipif(not MTT, reason=f"no *_MTT outputs under {OUTPUTS}")
@pytest.mark.parametrize("path", MTT, ids=lambda p: p.name)
def test_gte_tagging_rule_equals_the_toolkit_at_35235cb_with_a_stand_in_encoder(path):
    from musiceval.vocab.cmibench import TAG_VOCABULARIES
    from musiceval.encoders.gte import GTE_QUERY_PROMPT
    from musiceval.protocols.mir.metrics import families as fam
    from musiceval.protocols.mir.metrics.tagging import macro_auc

    raw = json.loads(path.read_text())[:1500]  # the rule, not the volume: a prefix of the real file
    records = [r for r in load_outputs(path).records if r.index < 1500]
    assert len(records) == len(raw)

    docs: dict[tuple, np.ndarray] = {}  # document_embeddings = gte.encode(answer_list), once (as at 35235cb)

    def gte_branch(response, answer_list):  # gte.encode([response], prompt_name="query") @ docs.T * 100
        d = docs.setdefault(tuple(answer_list), _stand_in_embed(answer_list))
        return (_stand_in_embed([GTE_QUERY_PROMPT + response]) @ d.T * 100)[0]

    want = tk.multi_label_scores(raw, list(TAG_VOCABULARIES["MTT"]), gte_branch)
    res = score_task("MTT", records, compat="cmi-bench", embed=_stand_in_embed, query_prefix=GTE_QUERY_PROMPT)
    assert res.metrics["roc_auc"] == pytest.approx(want["ROC-AUC"], abs=1e-12)
    tags = tuple(sorted(t.lower().strip() for t in TAG_VOCABULARIES["MTT"]))
    y, s = fam.tag_matrices(records, tags, "cmi-bench", _stand_in_embed, GTE_QUERY_PROMPT)
    summary = macro_auc(y, s, tags, pr_all_tags=True)
    assert summary["pr_auc"] == pytest.approx(want["PR-AUC"], abs=1e-12)
    assert summary["roc_auc"] == pytest.approx(want["ROC-AUC"], abs=1e-12)
    # over tags with both classes only (musiceval's default) the PR-AUC differs when a tag has no positive
    if summary["excluded"]:
        assert macro_auc(y, s, tags)["pr_auc"] != pytest.approx(want["PR-AUC"])


@pytest.mark.skipif(not MTT, reason=f"no *_MTT outputs under {OUTPUTS}")
def test_bertscore_tagging_rule_equals_the_toolkit_at_35235cb_on_real_answers():
    """The BERT branch with one real bert-score scorer on both sides (the bundled MiniLM, layer 6,
    standing in for roberta-large)."""
    pytest.importorskip("bert_score")
    from musiceval.vocab.cmibench import TAG_VOCABULARIES
    from musiceval.protocols.mir.metrics import families as fam
    from musiceval.protocols.mir.metrics.tagging import macro_auc
    from musiceval.protocols.mir.engine import load_bertscorer

    cached, reason = load_bertscorer("minilm", 6)
    assert reason is None, reason
    scorer = cached.scorer
    path = MTT[0]
    raw = json.loads(path.read_text())[:8]  # 8 x 50 pairs per side: cheap on 2 shared cores
    records = [r for r in load_outputs(path).records if r.index < 8]

    def bert_branch(response, answer_list):  # P, R, F1 = score([response] * n, answer_list); R
        _, r, _ = scorer.score([response] * len(answer_list), answer_list)
        return r.cpu().numpy()

    want = tk.multi_label_scores(raw, list(TAG_VOCABULARIES["MTT"]), bert_branch)
    tags = tuple(sorted(t.lower().strip() for t in TAG_VOCABULARIES["MTT"]))
    y, s = fam.tag_matrices_bertscore(records, tags, "cmi-bench", scorer)
    got = macro_auc(y, s, tags, pr_all_tags=True)
    assert got["roc_auc"] == pytest.approx(want["ROC-AUC"], abs=1e-6)
    assert got["pr_auc"] == pytest.approx(want["PR-AUC"], abs=1e-6)


EMO = sorted(OUTPUTS.glob("*/*_EMO_*.jsonl"))
#: compat mode -> the toolkit's rating reader it follows (cal_r2 around it is 35235cb's in both)
RATING_READERS = {"cmi-bench": tk.extract_int_2cafca5, "cmi-bench@35235cb": tk.extract_int}


@pytest.mark.skipif(not EMO, reason=f"no *_EMO_* outputs under {OUTPUTS}")
@pytest.mark.parametrize("compat", sorted(RATING_READERS))
@pytest.mark.parametrize("path", EMO, ids=lambda p: p.name)
def test_rating_r2_compat_equals_the_toolkit_on_real_outputs(path, compat):
    raw = json.loads(path.read_text())
    loaded = load_outputs(path)
    assert len(loaded.records) == len(raw)
    res = score_task(loaded.task, loaded.records, compat=compat)
    want = tk.cal_r2(raw, extract_int=RATING_READERS[compat])
    assert res.metrics["r2"] == pytest.approx(want, abs=1e-5)  # torchmetrics computes in float32


@pytest.mark.skipif(not EMO, reason=f"no *_EMO_* outputs under {OUTPUTS}")
def test_the_two_rating_readers_give_different_r2_on_a_real_file():
    """The shipped EMO files hold answers with several numbers, so the choice of commit shows."""
    raw = json.loads(EMO[0].read_text())
    assert tk.cal_r2(raw, extract_int=tk.extract_int) != pytest.approx(tk.cal_r2(raw, extract_int=tk.extract_int_2cafca5),
                                                                       abs=1e-3)


def test_the_hand_derived_ratings_match_the_transcribed_extract_int():
    """tests/parsers/test_numbers.py derives its ratings from extract_int's text; the transcriptions
    of that text at 2cafca5 and 35235cb give the same values (-0.5 is the toolkit's missing)."""
    from tests.parsers.test_numbers import SEPARATING

    for param in SEPARATING:
        text, first, last = param.values
        text = text.replace("out of 9", "")  # cal_r2 deletes it before extract_int
        assert tk.extract_int_2cafca5(text) == (-0.5 if first is None else first), param.id
        assert tk.extract_int(text) == (-0.5 if last is None else last), param.id
