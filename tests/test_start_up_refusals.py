"""What can be known when pytest starts is refused then: exit 2 and one ``musiceval:`` line naming the
file, the field and the fix, never a setup error with a traceback per test (docs/hardening.md,
"Refused at start-up, not per test").

- a vocabulary file an answers entry names (``vocab = "genres.json"``) that is malformed;
- a ``[baseline]`` whose answer files are unusable (the same vocabulary, a torn CMI-Bench array).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from musiceval.suite.config import parse_config
from musiceval.suite.schema import ConfigError

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
BAD_VOCAB = {"labels": {"bass": [["a", "b"]]}}
NSYNTH = FIXTURES / "factual" / "nsynth_midashenglm.jsonl"


def _project(pytester: pytest.Pytester, config: str) -> pytest.RunResult:
    (pytester.path / "evals").mkdir()
    shutil.copy(REPO / "evals" / "test_musiceval.py", pytester.path / "evals")
    shutil.copy(NSYNTH, pytester.path / "nsynth.jsonl")
    (pytester.path / "genres.json").write_text(json.dumps(BAD_VOCAB), encoding="utf-8")
    (pytester.path / "musiceval.toml").write_text(config, encoding="utf-8")
    return pytester.runpytest_subprocess("evals", "-p", "no:cacheprovider", "-p", "no:randomly",
                                         "--musiceval-results-dir", str(pytester.path / "res"))


def _one_line(out: pytest.RunResult) -> str:
    text = out.stdout.str() + out.stderr.str()
    assert out.ret == 2, text[-3000:]
    assert "Traceback" not in text and "ERROR at setup" not in text and " passed" not in text, text[-3000:]
    (line,) = [ln for ln in text.splitlines() if "musiceval:" in ln]
    return line


MODEL = '[[model]]\nname = "ours"\n[[model.answers]]\nprotocol = "factual"\nfile = "nsynth.jsonl"\n'


def test_a_malformed_vocabulary_file_stops_the_session_at_start_up_naming_the_file_and_field(pytester):
    line = _one_line(_project(pytester, MODEL + 'vocab = "genres.json"\n'))
    assert "genres.json" in line and "label 'bass'" in line and "field 'labels'" in line and "[['a', 'b']]" in line
    assert "answers #1" in line and "fix the file or 'vocab'" in line


def test_a_baseline_whose_vocabulary_is_malformed_is_refused_at_start_up(pytester):
    config = (MODEL + 'vocab = "nsynth"\n[baseline]\nname = "v1"\n[[baseline.answers]]\nprotocol = "factual"\n'
              'file = "nsynth.jsonl"\nvocab = "genres.json"\n')
    line = _one_line(_project(pytester, config))
    assert "[baseline]" in line and "genres.json" in line and "field 'labels'" in line


def test_a_baseline_whose_answer_file_is_torn_is_refused_at_start_up(pytester):
    rows = json.loads((FIXTURES / "mir" / "outputs" / "ltu" / "ltu_GTZAN.jsonl").read_text(encoding="utf-8"))
    for folder, text in (("new", json.dumps(rows)), ("old", json.dumps(rows)[:5000])):
        (pytester.path / folder).mkdir()
        (pytester.path / folder / "ltu_GTZAN.jsonl").write_text(text, encoding="utf-8")
    config = ('[[model]]\nname = "ours"\n[[model.answers]]\nprotocol = "mir"\ndir = "new"\n'
              '[baseline]\nname = "v1"\n[[baseline.answers]]\nprotocol = "mir"\ndir = "old"\n')
    line = _one_line(_project(pytester, config))
    assert "baseline 'v1'" in line and "old/ltu_GTZAN.jsonl" in line and "invalid JSON array" in line


@pytest.mark.parametrize("content, problem", [
    (BAD_VOCAB, "label 'bass' needs a non-empty name and a list of synonym strings (field 'labels', got [['a', 'b']])"),
    ({"labels": {}}, "'labels' must be a non-empty object"),
    ({"labels": ["rock"], "ignore": [1]}, "'ignore' must be a list of strings"),
    ([], "expected a JSON object"),
])
def test_the_config_reads_every_vocabulary_file_it_names(tmp_path, content, problem):
    (tmp_path / "a.jsonl").write_text("{}\n", encoding="utf-8")
    (tmp_path / "v.json").write_text(json.dumps(content), encoding="utf-8")
    raw = {"model": [{"name": "m", "answers": [{"protocol": "factual", "file": "a.jsonl", "vocab": "v.json"}]}]}
    with pytest.raises(ConfigError) as err:
        parse_config(raw, where="musiceval.toml", base=tmp_path)
    assert str(tmp_path / "v.json") in str(err.value) and problem in str(err.value)


def test_a_file_of_controls_alone_is_refused_at_start_up_and_by_musiceval_score(pytester, capsys):
    """Answers under noise (or any control) and none under Correct: every gate compares the model's
    own answers with a control, so there is nothing to gate; one line naming the conditions found."""
    rows = [json.loads(line) for line in (FIXTURES / "choice" / "dev_midashenglm.jsonl").read_text().splitlines()[:30]]
    controls = pytester.path / "noise.jsonl"
    controls.write_text("\n".join(json.dumps({"item_id": f"q{k}", "question": r["question"], "choices": r["choices"],
                                              "answer": r["answer"], "response": r["model_output"], "condition": "noise",
                                              "model": "ours"}) for k, r in enumerate(rows)) + "\n", encoding="utf-8")
    line = _one_line(_project(pytester, '[[model]]\nname = "ours"\n[[model.answers]]\nprotocol = "choice"\n'
                                        'file = "noise.jsonl"\n'))
    assert "noise.jsonl" in line and "under noise only, none under the Correct condition" in line
    from musiceval.cli import main

    capsys.readouterr()  # the session's own output
    assert main(["score", "choice", str(controls), "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no answer under the Correct condition" in err[0] and "holds noise only" in err[0]
