"""A CMI-Bench task's variant file (``<model>_Lyra_<task>_test_available.jsonl``, the toolkit's name for
the outputs of ``CMI_Lyra_<task>_test_available.jsonl``, docs/cmi-bench.md) is scored by the task's rules
and is a source of its own beside the task's file: its own label, so its gates and its baseline pairing
never mix with the full test split's."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from musiceval.data.cmibench import CmiBenchFormatError, outputs_dir
from musiceval.suite.config import config_for_answers, load_config

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mir" / "instructions" / "development"


def _outputs(path: Path, answers: list[str]) -> Path:
    """The toolkit's output records for the real first rows of CMI_Lyra_dance_test_available.jsonl."""
    rows = [json.loads(line) for line in
            (FIXTURES / "CMI_Lyra_dance_test_available.jsonl").read_text(encoding="utf-8").splitlines()]
    records = [{"question": r["instruction"], "response": a, "correct_answer": r["output"],
                "audioid": r["audio_path"][0], "other": r["other"]} for r, a in zip(rows, answers)]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_the_task_file_and_its_variant_are_two_sources_of_one_task(tmp_path):
    _outputs(tmp_path / "qwen2_Lyra_dance.jsonl", ["no", "yes", "yes"])
    _outputs(tmp_path / "qwen2_Lyra_dance_test_available.jsonl", ["no", "no", "yes"])
    listed = outputs_dir(tmp_path)
    assert [(e.model, e.task, e.variant, e.label) for e in listed] == [
        ("qwen2", "Lyra_dance", "", "Lyra_dance"),
        ("qwen2", "Lyra_dance", "test_available", "Lyra_dance_test_available")]
    sources = config_for_answers(tmp_path).sources("mir")
    assert sorted((s.label, s.task) for s in sources) == [("Lyra_dance", "Lyra_dance"),
                                                         ("Lyra_dance_test_available", "Lyra_dance")]
    assert len({s.id for s in sources}) == 2


def test_two_files_of_one_variant_are_refused_by_the_variant_name(tmp_path):
    _outputs(tmp_path / "qwen2_Lyra_dance_test_available.jsonl", ["no"])
    _outputs(tmp_path / "qwen2_Lyra_dance_test_available.json", ["no"])
    with pytest.raises(CmiBenchFormatError, match=r"two files hold task Lyra_dance_test_available "
                                                  r"\(qwen2_Lyra_dance_test_available.jsonl, qwen2_Lyra_dance_test_available.json\)"):
        outputs_dir(tmp_path)


def test_a_file_entry_without_a_label_is_labelled_with_its_variant(tmp_path):
    _outputs(tmp_path / "qwen2_Lyra_dance_test_available.jsonl", ["no", "no", "yes"])
    (tmp_path / "musiceval.toml").write_text("[[model]]\nname = 'qwen2'\n[[model.answers]]\nprotocol = 'mir'\n"
                                             "file = 'qwen2_Lyra_dance_test_available.jsonl'\n")
    (source,) = load_config(None, tmp_path).sources("mir")
    assert (source.label, source.task) == ("Lyra_dance_test_available", "Lyra_dance")


def test_score_mir_scores_a_variant_by_its_tasks_rules_and_names_the_variant(tmp_path, capsys):
    from musiceval.cli import main

    answers = ["no", "Yes, it is.", "I do not know"]
    variant = _outputs(tmp_path / "qwen2_Lyra_dance_test_available.jsonl", answers)
    plain = _outputs(tmp_path / "qwen2_Lyra_dance.jsonl", answers)
    reports = []
    for path in (variant, plain):
        assert main(["score", "mir", str(path), "--json"]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    assert reports[0]["task"] == reports[1]["task"] == "Lyra_dance"
    assert reports[0]["variant"] == "test_available" and "variant" not in reports[1]
    assert reports[0]["metrics"] == reports[1]["metrics"] and reports[0]["n"] == 3
    # "no" on a "no" row is right; "Yes, it is." on a "no" row is wrong; "I do not know" on a "yes" row is wrong
    assert reports[0]["metrics"]["accuracy"] == pytest.approx(1 / 3)
