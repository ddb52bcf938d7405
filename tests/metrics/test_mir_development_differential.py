"""``--compat cmi-bench`` on the development branch's tasks equals the toolkit's own functions
(tests/metrics/toolkit_development.py, transcribed from ``evaluate.py`` at nicolaus625/CMI-bench@35235cb)
on the real references of fixtures/mir/instructions/development and answers of many shapes, written
and generated here (no model outputs of these tasks exist upstream)."""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from musiceval.parsers.sections import read_sections
from musiceval.protocols.mir.metrics.tasks import score_task
from musiceval.schemas import OutputRecord
from musiceval.vocab.cmibench import CLASS_VOCABULARIES, LABEL_SET_VOCABULARIES
from tests.metrics import toolkit_development as tk

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mir" / "instructions" / "development"


def _references(task: str) -> list[str]:
    rows = [json.loads(line) for line in (FIXTURES / f"CMI_{task}.jsonl").read_text(encoding="utf-8").splitlines()]
    return [r["output"] for r in rows]  # every row, training rows too: more references to score against


def _pairs(task: str, answers: list[str], seed: int) -> list[tuple[str, str]]:
    refs = _references(task)
    rng = random.Random(seed)
    return [(answer, rng.choice(refs)) for answer in answers]


def _recs(pairs):
    return [OutputRecord(item_id=f"{k}|c{k}", index=k, question="q", response=resp, correct_answer=ref, audioid=f"c{k}",
                         group=f"c{k}", other="") for k, (resp, ref) in enumerate(pairs)]


def _raw(pairs):
    return [{"response": resp, "correct_answer": ref} for resp, ref in pairs]


def _answers(labels, rng: random.Random, n: int) -> list[str]:
    """Answers that name zero to three labels, decorated, in and out of the instruction's spelling."""
    out = []
    for _ in range(n):
        named = rng.sample(list(labels), rng.randint(0, min(3, len(labels))))
        named = [rng.choice([x, x.upper(), x.replace("-", " "), x.replace("ā", "a")]) for x in named]
        out.append(rng.choice(["{}", "The answer is {}.", "I think: {}", "{} (not sure)", "No idea"]).format(", ".join(named)))
    return out


@pytest.mark.parametrize("task", ["ArabAndalusian_nawba", "ArabAndalusian_tab", "ArabAndalusian_form", "ArabAndalusian_mizan"])
def test_arab_andalusian_compat_equals_the_toolkit(task):
    pairs = _pairs(task, _answers(CLASS_VOCABULARIES[task], random.Random(task), 300), seed=1)
    got = score_task(task, _recs(pairs), compat="cmi-bench").metrics["accuracy"]
    assert got == pytest.approx(tk.andalusian_multiclass_acc(_raw(pairs)))


def test_lyra_dance_compat_equals_the_toolkit():
    answers = ["yes", "No", "Yes.", "no, not for dancing", "It is a dance: yes", "I know this one", "Nope", "YES!", "",
               "yes and no", "nothing to say", "Yes, it is intended for dancing."] * 10
    pairs = _pairs("Lyra_dance", answers, seed=2)
    got = score_task("Lyra_dance", _recs(pairs), compat="cmi-bench").metrics["accuracy"]
    assert got == pytest.approx(tk.lyra_dance_acc(_raw(pairs)))


@pytest.mark.parametrize("task", list(LABEL_SET_VOCABULARIES))
def test_lyra_label_sets_compat_equal_the_toolkit(task):
    pairs = _pairs(task, _answers(LABEL_SET_VOCABULARIES[task], random.Random(task), 200), seed=3)
    got = score_task(task, _recs(pairs), compat="cmi-bench").metrics
    want = tk.lyra_multilabel_scores(_raw(pairs))
    assert {k: got[k] for k in ("micro_f1", "macro_f1", "exact_match")} == pytest.approx(
        {k: want[k] for k in ("micro_f1", "macro_f1", "exact_match")})


def _structure_answers(refs: list[str], rng: random.Random) -> list[str]:
    out = []
    for ref in refs:
        sections = read_sections(ref)
        jitter = [(s + rng.uniform(-2, 2), e + rng.uniform(-2, 2), lab) for s, e, lab in sections]
        jitter = [(max(0.0, s), e, lab) for s, e, lab in jitter]
        out += [ref, str([(round(s, 2), round(e, 2), lab) for s, e, lab in jitter]),
                "Sections: " + "; ".join(f"({s:.1f}, {e:.1f}, {lab.title()})" for s, e, lab in jitter),
                ", ".join(f"[{s:.0f}-{e:.0f}] {lab}" for s, e, lab in jitter),
                " ".join(f"{int(s) // 60}:{int(s) % 60:02d} - {int(e) // 60}:{int(e) % 60:02d}" for s, e, _ in jitter),
                "[(0, 30, 'verse')]", "I cannot tell.", "[('10', '5', 'intro')]", str([{"start": 0, "end": 20, "label": "Refrain"}])]
    return out


def test_song_structure_compat_equals_the_toolkit():
    refs = _references("SongFormBench")
    answers = _structure_answers(refs, random.Random(4))
    pairs = [(a, refs[k % len(refs)]) for k, a in enumerate(answers)]
    got = score_task("SongFormBench", _recs(pairs), compat="cmi-bench").metrics
    want = tk.song_structure_analysis(_raw(pairs))
    assert set(got) == set(want)
    for metric, value in want.items():
        assert got[metric] == pytest.approx(value, nan_ok=True), metric


def test_the_section_reader_equals_the_toolkit_parser():
    refs = _references("SongFormBench")
    for answer in _structure_answers(refs, random.Random(5)):
        assert read_sections(answer) == tk.parse_song_structure_segments(answer), answer
    # one section over the whole track: no inner boundary, the deviation is NaN and so is the toolkit's mean
    assert np.isnan(tk.song_structure_analysis(_raw([("[(0, 300, 'verse')]", refs[0])]))["deviation_ref_to_est"])
