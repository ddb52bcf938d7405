"""Counted, not dropped (docs/hardening.md, "Every line accounted for"): items a protocol's rule leaves out are
listed under ``excluded``
in ``evaluate()`` with the rule's name, never as per-item failures, and scored + failed + left out
accounts for every input record."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from musiceval.data.formats import load_answers
from musiceval.exclusions import LISTED_IDS, RULES, Exclusion, exclude, register_rule, summarize
from musiceval.protocols import ProtocolSettings
from musiceval.protocols.factual import FactualProtocol
from musiceval.protocols.freeform import FreeformProtocol
from musiceval.protocols.mir import MirProtocol

REPO = Path(__file__).resolve().parents[2]
MUSICQA = REPO / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl"
SHARED, ALONE = "Identify the genre of the given music.", "Which genre is this, in one word?"


def _freeform(tmp_path: Path, rows: list[dict], **options) -> FreeformProtocol:
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    answers = load_answers(path, "musiceval-freeform", protocol="freeform")
    return FreeformProtocol.from_answers(answers, ProtocolSettings(options={"metrics": ["bleu"], **options}))


def _row(k: int, question: str, condition: str = "correct") -> dict:
    return {"id": f"q{k}", "question": question, "reference": f"a calm piano piece number {k}",
            "response": f"calm piano {k}", "condition": condition, "group": f"clip{k}"}


def _cmi_bench(tmp_path: Path, name: str, questions: list[str]) -> Path:
    genres = ["blues", "jazz", "rock", "pop", "metal", "disco"]
    records = [{"question": q, "response": genres[(k + 1) % 6], "correct_answer": genres[k % 6],
                "audioid": f"data/GTZAN/{genres[k % 6]}.{k:05d}.wav", "other": ""} for k, q in enumerate(questions)]
    path = tmp_path / name
    path.write_text(json.dumps(records))
    return path


def test_musicqa_references_that_copy_the_question_are_excluded_not_failed():
    answers = load_answers(MUSICQA, None, protocol="freeform")
    out = FreeformProtocol.from_answers(answers, ProtocolSettings(options={"metrics": ["bleu"]})).evaluate()
    rule = out["excluded"]["reference_copies_question"]
    assert rule["n"] == 4 and rule["conditions"] == [] and "copy of the question" in rule["why"]
    assert out["n_failed"] == 0 and not any(f["item_id"] in rule["ids"] for f in out["failures"])
    assert out["n"] + out["n_failed"] + rule["n"] == 400  # every line of the file


def test_freeform_items_without_a_same_prompt_partner_are_out_of_random_only(tmp_path):
    rows = [_row(k, "Describe the music") for k in range(4)] + [_row(4, "What instrument leads?")]
    protocol = _freeform(tmp_path, rows)
    out = protocol.evaluate()
    rule = out["excluded"]["no_random_partner"]
    assert rule["ids"] == ["q4"] and rule["conditions"] == ["random"] and "same-prompt" in rule["why"]
    assert out["n"] == 5 and out["n_failed"] == 0  # scored under Correct
    random = protocol.scores("bleu", "random")
    assert "q4" not in random.ids and not random.failures
    (exclusion,) = [e for e in protocol.exclusions() if e.rule == "no_random_partner"]
    assert exclusion.applies_to("random") and not exclusion.applies_to("correct")


def test_freeform_recorded_random_rows_missing_for_some_items(tmp_path):
    rows = [_row(k, "Describe the music") for k in range(3)] + [_row(k, "Describe the music", "random") for k in range(2)]
    rule = _freeform(tmp_path, rows).evaluate()["excluded"]["no_random_partner"]
    assert rule["ids"] == ["q2"] and "records no random answer" in rule["why"]


def test_keep_compared_only_counts_what_it_leaves_out(tmp_path):
    rows = [_row(k, "Describe the music") for k in range(3)] + [_row(k, f"Question {k}?") for k in range(3, 6)]
    out = _freeform(tmp_path, rows, keep_compared_only=True).evaluate()
    assert out["excluded"]["not_compared"]["ids"] == ["q3", "q4", "q5"]
    assert out["n"] + out["n_failed"] + out["excluded"]["not_compared"]["n"] == 6


def test_factual_items_without_a_random_partner_are_excluded_not_failures(tmp_path):
    path = _cmi_bench(tmp_path, "m_GTZAN.json", [SHARED] * 4 + [ALONE])
    answers = load_answers(path, None, protocol="factual")
    protocol = FactualProtocol.from_answers(answers, ProtocolSettings(options={"vocab": "gtzan"}))
    rule = protocol.evaluate()["excluded"]["no_random_partner"]
    assert rule["n"] == 1 and rule["conditions"] == ["random"]
    random = protocol.scores("f1", "random")
    assert random.n == 4 and rule["ids"][0] not in {f.item_id for f in random.failures}
    assert protocol.result.metrics["random"]["n_unpaired"] == 1


def test_mir_counts_items_beyond_max_items_and_items_without_a_random_partner(tmp_path):
    path = _cmi_bench(tmp_path, "m_GTZAN.json", [SHARED] * 4 + [ALONE] + [SHARED] * 3)
    answers = load_answers(path, None, protocol="mir")
    out = MirProtocol.from_answers(answers, ProtocolSettings(options={"max_items": 6})).evaluate()
    beyond, alone = out["excluded"]["beyond_max_items"], out["excluded"]["no_random_partner"]
    assert beyond["n"] == 2 and "first 6 of 8 records" in beyond["why"] and beyond["conditions"] == []
    assert alone["n"] == 1 and alone["ids"][0].startswith("4|")
    assert out["n"] + out["n_failed"] + beyond["n"] == 8


def test_summaries_list_the_first_ids_and_count_them_all():
    many = exclude("not_compared", [f"i{k}" for k in range(50)]) + exclude("not_compared", ["i0", "extra"])
    entry = summarize(many)["not_compared"]
    assert entry["n"] == 51 and entry["ids"] == [f"i{k}" for k in range(LISTED_IDS)]
    assert exclude("not_compared", []) == []


def test_rules_are_a_registry():
    with pytest.raises(ValueError, match="unknown exclusion rule 'made_up'"):
        Exclusion("made_up", ("a",))
    register_rule("test_only_rule", "left out by a test")
    try:
        assert summarize(exclude("test_only_rule", ["a"]))["test_only_rule"]["why"] == "left out by a test"
        with pytest.raises(ValueError, match="already registered"):
            register_rule("test_only_rule", "another reason")
    finally:
        RULES.pop("test_only_rule")
