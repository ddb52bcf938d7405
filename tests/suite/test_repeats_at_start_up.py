"""Sampled answers, K per item (docs/evaluate-your-model.md, "Sampled answers"): ``repeats`` of a
``[[model]]`` and ``--musiceval-repeats`` are checked at start-up; a repeats option that would ask
nothing (no catalogue benchmark named) stops pytest with exit 2 and one line naming the fix."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from musiceval.suite.config import load_config
from musiceval.suite.schema import ConfigError

REPO = Path(__file__).resolve().parents[2]
LIVE = "[[model]]\nname = 'm'\nlive = 'openai-compatible:http://127.0.0.1:9/v1#echo'\n"


@pytest.mark.parametrize("value", ["0", "-2", "1.5", "true", "'3'"])
def test_repeats_must_be_a_whole_number_of_at_least_one(tmp_path, value):
    (tmp_path / "musiceval.toml").write_text(LIVE + f"repeats = {value}\n")
    with pytest.raises(ConfigError, match="'repeats' must be a whole number >= 1"):
        load_config(None, tmp_path)


def test_repeats_are_read_with_the_model(tmp_path):
    (tmp_path / "musiceval.toml").write_text(LIVE + "repeats = 4\n")
    assert load_config(None, tmp_path).models[0].repeats == 4
    (tmp_path / "musiceval.toml").write_text(LIVE)
    assert load_config(None, tmp_path).models[0].repeats == 1


@pytest.mark.parametrize("config, args, message", [
    pytest.param(LIVE + "repeats = 3\n", (), "repeats = 3 asks the catalogue benchmarks several times, and none is named",
                 id="config-without-benchmarks"),
    pytest.param(LIVE, ("--musiceval-repeats", "3"), "repeats = 3 asks the catalogue benchmarks", id="option-without-benchmarks"),
    pytest.param("", ("--musiceval-repeats", "3", "--musiceval-model", "recorded:a.jsonl"),
                 "--musiceval-repeats 3 asks a live model each item 3 times, and no model here is live", id="recorded"),
    pytest.param(LIVE, ("--musiceval-repeats", "0"), "--musiceval-repeats 0: expected a whole number >= 1", id="option-zero"),
    pytest.param(LIVE, ("--musiceval-repeats", "3", "--musiceval-benchmarks", "hummusqa"),
                 "--musiceval-repeats 3 needs sampling: greedy decoding (temperature 0, or do_sample=false) gives 3 "
                 "identical answers; set the model's temperature (--musiceval-model-args temperature=0.7)", id="greedy"),
])
def test_pytest_exits_2_with_one_line(pytester: pytest.Pytester, monkeypatch, config, args, message):
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    (pytester.path / "a.jsonl").write_text(json.dumps({"item_id": "1", "text": "x"}) + "\n")
    (pytester.path / "musiceval.toml").write_text(config)
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--musiceval-results-dir", str(pytester.path / "r"),
                                           *args)
    assert result.ret == 2
    lines = [line for line in result.stderr.lines if "musiceval:" in line]
    assert len(lines) == 1 and message in lines[0], result.stderr.str()[-2000:]
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_check_repeats_refuses_greedy_decoding_and_one_answer_formats():
    from musiceval.models.base import GenerationSettings
    from musiceval.suite.repeats import check_repeats

    sampled = GenerationSettings(temperature=0.7)
    assert check_repeats(1, GenerationSettings(), flag="--repeats", args_flag="--model-args") == 1
    assert check_repeats(4, sampled, flag="--repeats", args_flag="--model-args") == 4
    with pytest.raises(ValueError, match=r"--repeats 2 needs sampling: .*\(--model-args temperature=0.7\)"):
        check_repeats(2, GenerationSettings(temperature=0.7, do_sample=False), flag="--repeats", args_flag="--model-args")
    with pytest.raises(ValueError, match="cmi-gtzan write CMI-Bench outputs, which hold one answer per question"):
        check_repeats(2, sampled, flag="--repeats", args_flag="--model-args", formats=[("cmi-gtzan", "cmi-bench")])
