"""The suite config: where it is found, what it declares, and that every mistake names its key."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from musiceval.suite.config import find_config, load_config, parse_config
from musiceval.keys import margin_for
from musiceval.suite.schema import STATIC_SECTIONS, ConfigError, validate_thresholds

REPO = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, text: str, name: str = "musiceval.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _answers(tmp_path: Path, name: str = "a.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"item_id": "1", "text": "x"}) + "\n", encoding="utf-8")
    return path


def test_defaults_apply_without_any_config(tmp_path):
    cfg = load_config(None, tmp_path)
    assert cfg.path is None and cfg.models == () and cfg.sources() == []
    assert cfg.thresholds["choice"]["min_parse_rate"] == 0.90
    assert cfg.thresholds["defaults"] == {k: v.default for k, v in STATIC_SECTIONS["defaults"].items()}


def test_found_in_order_explicit_then_rootdir_then_pyproject(tmp_path):
    _write(tmp_path, '[tool.musiceval.choice]\nmin_parse_rate = 0.5\n', "pyproject.toml")
    assert load_config(None, tmp_path).thresholds["choice"]["min_parse_rate"] == 0.5
    _write(tmp_path, "[choice]\nmin_parse_rate = 0.6\n")
    assert load_config(None, tmp_path).thresholds["choice"]["min_parse_rate"] == 0.6
    other = _write(tmp_path, "[choice]\nmin_parse_rate = 0.7\n", "other.toml")
    assert load_config(other, tmp_path).thresholds["choice"]["min_parse_rate"] == 0.7
    with pytest.raises(ConfigError, match="not found; pass --musiceval-config"):
        load_config(tmp_path / "missing.toml", tmp_path)


@pytest.mark.parametrize("text, message", [
    ("[choice]\nmin_ifrr = 0.9\n", r"\[choice\]: unknown key 'min_ifrr'"),
    ("[chioce]\nmin_parse_rate = 0.9\n", r"top level: unknown key 'chioce'; did you mean 'choice'"),
    ("[tempo]\nmargin = 0.1\n", r"unknown key 'tempo'; known keys: .*; a \[tempo\] section of a protocol from another "
                                  r"package needs that package installed .*musiceval.protocols entry point"),
    ("[choice]\nmin_parse_rate = 'high'\n", r"\[choice\] min_parse_rate: expected a number"),
    ("[defaults]\nalpha = true\n", r"expected a number, got a boolean"),
    ("[defaults]\nalpha = 2.0\n", r"\[defaults\] alpha: expected a finite number in \(0, 1\), got 2.0"),
    ("[defaults]\nalpha = nan\n", r"alpha: expected a finite number in \(0, 1\), got nan"),
    ("[defaults]\nn_resamples = 0\n", r"n_resamples: expected an integer in \[1, 1000000\], got 0"),
    ("[defaults]\nn_resamples = 99999999999\n", r"n_resamples: expected an integer in \[1, 1000000\], got 99999999999"),
    ("[defaults]\npower = 1\n", r"power: expected a finite number in \(0, 1\), got 1.0"),
    ("[factual]\nn_permutations = 0\n", r"\[factual\] n_permutations: expected an integer in \[1, 1000000\], got 0"),
    ("[factual]\nn_permutations = -5\n", r"n_permutations: expected an integer in \[1, 1000000\], got -5"),
    ("[choice]\nmin_parse_rate = 1.5\n", r"min_parse_rate: expected a finite number in \[0, 1\], got 1.5"),
    ("[choice]\nmatcher = 'muchomusik'\n", r"\[choice\] matcher: unknown 'muchomusik'; did you mean 'muchomusic'\? "
                                            r"choose one of 'airbench-foundation', 'mmau', 'muchomusic', 'rul', "
                                            r"'strict'"),
    ("[mir]\ncompat = 'cmi'\n", r"\[mir\] compat: unknown 'cmi'; choose one of '', 'cmi-bench', 'cmi-bench@35235cb'"),
    ("[factual]\nlive_chunks = 'all'\n", r"\[factual\] live_chunks: unknown 'all'; choose one of 'any', 'majority'"),
    ("[[model]]\nname = 'm'\n[[model.answers]]\nprotocol = 'choice'\nfile = 'a.jsonl'\nmatcher = 'bogus'\n",
     r"answers #1: matcher: unknown 'bogus'; choose one of 'airbench-foundation', 'mmau', 'muchomusic', 'rul', "
     r"'strict'"),
    ("[mir]\nmargin = inf\n", r"\[mir\] margin: expected a finite number >= 0, got inf"),
    ("[mir]\nregression_margin = -0.01\n", r"regression_margin: expected a finite number >= 0"),
    ("[mir]\nmargins = { 'GTZAN' = nan }\n", r"margins.GTZAN: expected a finite number >= 0, got nan"),
    ("[mir]\ntagging_items = -1\n", r"tagging_items: expected an integer >= 0"),
    ("[text_encoders]\nmax_triplets = 0\n", r"max_triplets: expected an integer >= 1"),
    ('[checks."mir/*"]\nmargin = inf\n', r"'margin' must be a finite number >= 0 in the metric's units, got inf"),
    ("[[model]]\nname = 'm'\n[[model.answers]]\nprotocol = 'factual'\nfile = 'a.jsonl'\nvocab = []\n",
     r"answers #1: vocab: expected str, got list \(\[\]\)"),
    ("[[model]]\nname = 'm'\n[[model.answers]]\nprotocol = 'factual'\nfile = 'a.jsonl'\nn_permutations = 0\n",
     r"answers #1: n_permutations: expected an integer in \[1, 1000000\], got 0"),
    ("[[model]]\nname = 'm'\n[[model.answers]]\nprotocol = 'freeform'\nfile = 'a.jsonl'\nrandom_draws = 0\n",
     r"random_draws: expected an integer >= 1, got 0"),
    ("[[model]]\nname = 'm'\n[[model.answers]]\nprotocol = 'freeform'\nfile = 'a.jsonl'\nkeep_compared_only = 'yes'\n",
     r"keep_compared_only: expected bool"),
    ("[[model]]\nname = 'm'\n[[model.answers]]\nprotocol = 'choice'\nfile = ['a.jsonl']\n", r"'file' must be a string"),
    ("[[model]]\nname = 'm'\n[[model.answers]]\nprotocol = 'factual'\nfile = 'a.jsonl'\nvocab = 'genres.txt'\n",
     r"vocab 'genres.txt' is neither a built-in .* nor a file .*genres.txt not found"),
    ("[[model]]\nname = 'm'\n[[model.answers]]\nprotocol = 'freeform'\nfile = 'a.jsonl'\nrewrites = 'rw.jsonl'\n",
     r"rewrites file .*rw.jsonl not found; fix 'rewrites'"),
    pytest.param("x = " + "[" * 3000 + "]" * 3000 + "\n", r"nested too deeply to read; .*flatten the file", id="deep-arrays"),
    pytest.param("x = " + "{a=" * 2000 + "1" + "}" * 2000 + "\n", r"nested too deeply to read", id="deep-tables"),
    ("[defaults]\ninconclusive = 'pass'\n", r"inconclusive must be 'xfail' or 'fail'"),
    ("[mir]\nmargins = { 'GTZAN.accuracy' = 'x' }\n", r"margins.GTZAN.accuracy: expected a number"),
    ("[release]\nrequired = 'choice/*'\n", r"required must be a list"),
    ("[release]\nrequire = []\n", r"\[release\]: unknown key 'require'"),
    ('[checks."mir/*"]\ngate = false\n', r"needs a 'reason'"),
    ('[checks."mir/*"]\ngate = "no"\n', r"'gate' must be true"),
    ('[checks."mir/*"]\nmarign = 1\n', r"unknown key 'marign'; did you mean 'margin'"),
    ("[[model]]\nname = 'a/b'\n", r"'name' must be a short label"),
    ("[[model]]\nname = 'm'\nlive = 3\n", r"'live' must be a model spec"),
    ("[[model]]\nname = 'm'\n[[model]]\nname = 'm'\n", r"declared twice"),
    ("[[model]]\nname = 'm'\nanwsers = []\n", r"unknown key 'anwsers'; did you mean 'answers'"),
    ("[[model]]\nname = 'm'\n[[model.answers]]\nprotocol = 'chioce'\nfile = 'a.jsonl'\n", r"'protocol' must be one of"),
    ("[[model]]\nname = 'm'\n[[model.answers]]\nprotocol = 'choice'\nfile = 'nope.jsonl'\n", r"answer file .*nope.jsonl not found"),
    ("[[model]]\nname = 'm'\n[[model.answers]]\nprotocol = 'choice'\ndir = '.'\n", r"'dir' .* applies to protocol 'mir' only"),
    ("[[model]]\nname = 'm'\n[[model.answers]]\nprotocol = 'choice'\nfile = 'a.jsonl'\nvocab = 'x'\n", r"unknown key 'vocab'"),
    ("[[model]]\nname = 'm'\n[[model.answers]]\nprotocol = 'choice'\n", r"exactly one of 'file' or 'dir'"),
    ("choice = [", r"not valid TOML"),
])
def test_every_mistake_is_a_config_error_naming_the_key(tmp_path, text, message):
    _answers(tmp_path)
    _write(tmp_path, text)
    with pytest.raises(ConfigError, match=message):
        load_config(None, tmp_path)


def test_models_and_sources_with_paths_relative_to_the_config(tmp_path):
    sub = tmp_path / "cfg"
    sub.mkdir()
    _answers(sub, "choice.jsonl")
    outputs = sub / "out"
    outputs.mkdir()
    for name in ("m_GTZAN.jsonl", "m_GS_key.jsonl", "notes.jsonl"):
        (outputs / name).write_text("[]")
    path = _write(sub, "[[model]]\nname = 'ours'\nlive = 'hf:/x'\n"
                       "[[model.answers]]\nprotocol = 'choice'\nfile = 'choice.jsonl'\nmatcher = 'strict'\n"
                       "[[model.answers]]\nprotocol = 'mir'\ndir = 'out'\ncompat = 'cmi-bench'\n")
    cfg = load_config(path, tmp_path)
    (choice,) = cfg.sources("choice")
    assert choice.path == sub / "choice.jsonl" and choice.options == {"matcher": "strict"} and choice.id == "ours/choice/choice"
    mir = cfg.sources("mir")
    assert [s.task for s in mir] == ["GS_key", "GTZAN"] and all(s.options["compat"] == "cmi-bench" for s in mir)
    assert [m.name for m in cfg.live_models()] == ["ours"]


def test_the_last_matching_check_rule_wins_and_required_patterns_match(tmp_path):
    cfg = parse_config({"checks": {"mir/*": {"gate": False, "reason": "demo"},
                                   "mir/beats_chance/*/GTZAN/*": {"gate": True, "margin": 0.02}},
                        "release": {"required": ["choice/*"]}}, where="t", base=tmp_path)
    assert cfg.rule("mir/listens/M/GTZAN/accuracy").gate is False
    rule = cfg.rule("mir/beats_chance/M/GTZAN/accuracy")  # the one chance gate of GTZAN accuracy
    assert rule.gate is True and rule.margin == 0.02
    assert cfg.rule("choice/listens/M/x/accuracy") is None
    assert cfg.is_required("choice/parse_rate/M/x/parse_rate") and not cfg.is_required("mir/x")


def test_margins_most_specific_key_wins():
    section = validate_thresholds({"mir": {"margin": 0.1, "margins": {"accuracy": 0.2, "GTZAN": 0.3, "GTZAN.accuracy": 0.4}}},
                                  "t")["mir"]
    assert margin_for(section, "accuracy", "GTZAN") == 0.4
    assert margin_for(section, "accuracy", "VocalSet_tech") == 0.2
    assert margin_for(section, "weighted_score", "GTZAN") == 0.3
    assert margin_for(section, "wer", "DSing") == 0.1


def test_the_shipped_demo_config_is_valid_and_declares_three_models():
    path, raw = find_config(None, REPO)
    assert path == REPO / "musiceval.toml"
    cfg = load_config(None, REPO)
    assert [m.name for m in cfg.models] == ["MiDashengLM-7B", "MU-LLaMA", "LTU"]
    assert {s.protocol for s in cfg.sources()} == {"choice", "factual", "freeform", "mir"}
    assert len(cfg.sources("mir")) == 38
