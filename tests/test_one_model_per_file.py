"""One model, one run per answer file (docs/hardening.md): two models' answers in one file, or two
runs joined, never pass as one model.

- ``pytest evals/`` with a suite config declaring such a file, run as a team runs it (a scratch
  project in a subprocess): stops at start-up, exit 2, one line naming the models (or the repeated
  clips) and the fix;
- ``musiceval score choice`` on the same file exits 2 naming both models;
- an item answered twice is counted once (the second answer is that line's failure), a single record
  naming another model is one bad record, and coverage never exceeds the benchmark.
"""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from musiceval.cli import main as cli_main
from musiceval.data.formats import FormatError, load_answers
from musiceval.suite.config import AnswerSource, SuiteConfig
from musiceval.suite.runs import build_protocol, load_source

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
FIX = "split the file per model (or per run), or declare each model's file"


def _need_shared() -> None:
    if not (SHARED / "nsynth" / "dev_midashenglm.jsonl").is_file():
        pytest.skip(f"{SHARED} absent (../shared/data is optional)")


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _half_relabelled_choice(path: Path) -> Path:
    """MiDashengLM's MuChoMusic answers with every second row relabelled Qwen2-Audio (random letters)."""
    rng = random.Random(0)
    rows = _jsonl(SHARED / "muchomusic" / "dev_midashenglm.jsonl")
    return _write(path, [dict(r, model_name="Qwen2-Audio", model_output=rng.choice("ABCD")) if k % 2 else r
                         for k, r in enumerate(rows)])


def _both_models_nsynth(path: Path, *, names: bool = True) -> Path:
    """Every NSynth item answered by MiDashengLM and again by Qwen2-Audio."""
    rng = random.Random(1)
    rows = _jsonl(SHARED / "nsynth" / "dev_midashenglm.jsonl")
    other = [dict(r, model_name="Qwen2-Audio", model_output=rng.choice(["bass", "organ", "guitar"])) for r in rows]
    both = rows + other
    if not names:
        both = [{k: v for k, v in r.items() if k != "model_name"} for r in both]
    return _write(path, both)


def _joined_gtzan(folder: Path) -> Path:
    """Two CMI-Bench GTZAN output arrays of LTU joined into one."""
    folder.mkdir()
    rows = json.loads((SHARED / "cmi-bench" / "outputs" / "ltu" / "ltu_GTZAN.jsonl").read_text(encoding="utf-8"))
    (folder / "ltu_GTZAN.jsonl").write_text(json.dumps(rows + rows), encoding="utf-8")
    return folder


CASES = {
    "choice": ('protocol = "choice"\nfile = "answers.jsonl"', _half_relabelled_choice,
               ["MiDashengLM (100 records)", "Qwen2-Audio (100 records)"]),
    "factual": ('protocol = "factual"\nfile = "answers.jsonl"\nvocab = "nsynth"', _both_models_nsynth,
                ["MiDashengLM (300 records)", "Qwen2-Audio (300 records)"]),
    "mir": ('protocol = "mir"\ndir = "cmi"', None,
            ["answers 580 items, but CMI-Bench GTZAN (test split) has 290", "290 clips are answered more than once"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_file_of_two_models_or_two_runs_stops_the_session_at_start_up(pytester, case):
    _need_shared()
    entry, make, expected = CASES[case]
    if make is None:
        _joined_gtzan(pytester.path / "cmi")
    else:
        make(pytester.path / "answers.jsonl")
    (pytester.path / "evals").mkdir()
    shutil.copy(REPO / "evals" / "test_musiceval.py", pytester.path / "evals")
    (pytester.path / "musiceval.toml").write_text(f'[[model]]\nname = "MiDashengLM"\n[[model.answers]]\n{entry}\n',
                                                  encoding="utf-8")
    out = pytester.runpytest_subprocess("evals", "-p", "no:cacheprovider", "-p", "no:randomly",
                                        "--musiceval-results-dir", str(pytester.path / "res"))
    text = out.stdout.str() + out.stderr.str()
    assert out.ret == 2, text[-3000:]
    line = next(ln for ln in text.splitlines() if "musiceval: model 'MiDashengLM':" in ln)
    assert all(e in line for e in expected) and FIX in line, line
    assert "Traceback" not in text and "PASSED" not in text


def test_score_choice_refuses_a_file_of_two_models_naming_both(tmp_path, capsys):
    _need_shared()
    path = _half_relabelled_choice(tmp_path / "mixed.jsonl")
    assert cli_main(["score", "choice", str(path), "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "MiDashengLM (100 records), Qwen2-Audio (100 records)" in err[0] and FIX in err[0]


def test_an_item_answered_twice_counts_once_and_its_second_answer_is_a_failure(tmp_path):
    """No model names: the second answer to each clip is its line's failure; coverage counts each item once."""
    _need_shared()
    path = _both_models_nsynth(tmp_path / "twice.jsonl", names=False)
    source = AnswerSource("M", "factual", path, "nsynth", options={"vocab": "nsynth"})
    run = build_protocol(source, SuiteConfig(None, tmp_path))
    assert run.accounting.answered == 300 and run.accounting.records == 600
    assert len(run.accounting.unreadable) == 300
    assert all("again (line " in f.reason for f in run.accounting.unreadable)


def test_a_single_record_of_another_model_is_one_bad_record(tmp_path):
    _need_shared()
    rows = _jsonl(SHARED / "nsynth" / "dev_midashenglm.jsonl")[:20]
    rows[7] = dict(rows[7], model_name="Qwen2-Audio")
    answers = load_answers(_write(tmp_path / "one.jsonl", rows), protocol="factual")
    assert answers.model == "MiDashengLM" and len(answers.responses) == 19 and len(answers.items) == 19
    (failure,) = answers.failures
    assert "answered by model 'Qwen2-Audio'" in failure.reason and rows[7]["audio"] == failure.item_id


def test_more_items_than_the_benchmark_holds_are_refused(tmp_path):
    _need_shared()
    path = _write(tmp_path / "a.jsonl", _jsonl(SHARED / "nsynth" / "dev_midashenglm.jsonl")[:50])
    load_source(AnswerSource("M", "factual", path, "a", options={"vocab": "nsynth", "expected_items": 50}))
    with pytest.raises(FormatError, match=r"answers 50 items, but its expected_items has 49"):
        load_source(AnswerSource("M", "factual", path, "a", options={"vocab": "nsynth", "expected_items": 49}))
