"""Headline metrics with the gates' interval and n; the paired Correct-vs-Random figure;
chance levels and trivial baselines beside ``score mir``'s numbers."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from musiceval import cli
from musiceval.gates import Gate, GateConfig
from musiceval.protocols import ProtocolSettings
from musiceval.protocols.choice import ChoiceProtocol
from musiceval.records import ItemFailure, ItemScores
from musiceval.protocols.scoring import load_protocol_answers
from musiceval.commands.summary import interval_of, paired_difference

ROOT = Path(__file__).resolve().parents[1]
CHOICE = ROOT / "fixtures" / "choice" / "dev_midashenglm.jsonl"
FREEFORM = ROOT / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl"
GTZAN = ROOT / "fixtures" / "mir" / "outputs" / "ltu" / "ltu_GTZAN.jsonl"


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MUSICEVAL_CACHE", str(tmp_path / "cache"))


def run_json(capsys, *argv) -> dict:
    assert cli.main([*map(str, argv), "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return json.loads(out)


def test_interval_of_is_the_gates_interval_with_clusters():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 2, 60).astype(float)
    groups = [f"track{k // 3}" for k in range(60)]  # three items per track
    s = ItemScores("accuracy", [f"i{k}" for k in range(60)], values, groups=groups,
                   failures=(ItemFailure("i1", "unparsed: no option named"), ItemFailure("x", "audio missing")))
    got = interval_of(s, seed=7, name="choice:accuracy")
    want = Gate(GateConfig(seed=7)).interval(values, groups, name="choice:accuracy")
    assert (got["low"], got["high"]) == (want.low, want.high) and got["estimate"] == values.mean()
    assert (got["n"], got["n_unparsed"], got["n_failed"]) == (60, 1, 1)
    unclustered = Gate(GateConfig(seed=7)).interval(values, None, name="choice:accuracy")
    assert (want.low, want.high) != (unclustered.low, unclustered.high)  # the groups are used


def test_paired_difference_uses_only_items_both_scored():
    a = ItemScores("bleu", ["a", "b", "c", "d"], [0.5, 0.4, 0.9, 0.1], groups=["g1", "g1", "g2", "g3"])
    b = ItemScores("bleu", ["d", "b", "a", "z"], [0.0, 0.1, 0.2, 0.7], condition="random")
    d = paired_difference(a, b, name="freeform:bleu")
    assert d["n"] == 3 and d["estimate"] == pytest.approx(np.mean([0.5 - 0.2, 0.4 - 0.1, 0.1 - 0.0]))
    assert d["low"] <= d["estimate"] <= d["high"]


def test_choice_json_adds_intervals_and_keeps_keys(capsys):
    d = run_json(capsys, "score", "choice", CHOICE, "--seed", "3")
    assert {"protocol", "n", "n_failed", "metrics", "matcher", "format", "model"} <= set(d)
    assert d["metrics"]["accuracy"] == pytest.approx(0.685) and d["n"] == 200
    protocol = ChoiceProtocol.from_answers(load_protocol_answers(CHOICE, None, "choice"), ProtocolSettings(seed=3))
    s = protocol.scores("accuracy")
    want = Gate(GateConfig(seed=3)).interval(s.values, s.groups, name="choice:accuracy")
    assert d["intervals"]["accuracy"] == [pytest.approx(want.low), pytest.approx(want.high)]
    assert d["intervals"]["accuracy"][0] < d["metrics"]["accuracy"] < d["intervals"]["accuracy"][1]
    assert d["n_scored"] == {"accuracy": 200, "parse_rate": 200}
    names = [c["name"] for c in d["chances"]["accuracy"]]
    assert names == ["uniform chance 1/4", "best constant answer", "answer permutation"]
    assert d["chances"]["accuracy"][0] == {"name": "uniform chance 1/4", "kind": "fixed", "value": 0.25}


def test_choice_text_prints_interval_and_n(capsys):
    assert cli.main(["score", "choice", str(CHOICE)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("accuracy ") and "[" in x)
    m = re.fullmatch(r"\s*accuracy\s+0\.6850\s+\[(0\.\d{3}), (0\.\d{3})\]\s+n=200\s+\(exact binomial test \+ Clopper-Pearson CI; 1 unparsed\)", line)
    assert m and float(m[1]) < 0.685 < float(m[2]), line
    assert "vs uniform chance 1/4: 0.2500" in out


def test_freeform_paired_correct_minus_random(capsys, tmp_path):
    per_item = tmp_path / "items.jsonl"
    d = run_json(capsys, "score", "freeform", FREEFORM, "--metrics", "bleu,rouge_l", "--per-item", per_item)
    rows = [json.loads(x) for x in per_item.read_text().splitlines()]
    by = {(r["item_id"], r["condition"]): r for r in rows if "condition" in r}
    both = sorted({i for i, c in by if c == "random"} & {i for i, c in by if c == "correct"})
    assert both and len(both) < d["n_per_condition"]["correct"]  # Random covers fewer items than Correct
    for metric in ("bleu", "rouge_l"):
        diff = [by[(i, "correct")][metric] - by[(i, "random")][metric] for i in both]
        pd = d["paired_difference"][metric]
        assert pd["n"] == len(both) and pd["estimate"] == pytest.approx(np.mean(diff))
        assert pd["low"] <= pd["estimate"] <= pd["high"]
        assert d["correct_on_random_items"][metric] == pytest.approx(np.mean([by[(i, "correct")][metric] for i in both]))
    assert set(d["n_per_condition"]) == {"correct", "random"}
    assert d["n_scored"] == {"bleu": d["n_per_condition"]["correct"], "rouge_l": d["n_per_condition"]["correct"]}
    assert d["intervals"]["bleu"][0] < d["metrics"]["bleu"] < d["intervals"]["bleu"][1]

    assert cli.main(["score", "freeform", str(FREEFORM), "--metrics", "bleu,rouge_l"]) == 0
    text = capsys.readouterr().out
    assert "paired difference Correct - Random" in text
    assert re.search(rf"bleu\s+-?0\.\d{{4}}\s+\[-?0\.\d{{3}}, -?0\.\d{{3}}\]\s+n={len(both)}\s+\(correct - random", text)


def test_mir_chance_and_baseline_beside_the_score(capsys):
    d = run_json(capsys, "score", "mir", GTZAN)
    chances = {c["name"]: c for c in d["chances"]["accuracy"]}
    assert chances["majority-class baseline"]["value"] == pytest.approx(d["baseline"]["accuracy"])
    assert chances["uniform chance 1/10"]["value"] == pytest.approx(0.1)
    assert d["n_scored"]["accuracy"] == 200 and len(d["intervals"]["accuracy"]) == 2
    assert cli.main(["score", "mir", str(GTZAN)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    k = next(i for i, x in enumerate(lines) if re.match(r"\s*accuracy\s+0\.\d{4}\s+\[", x))
    assert "n=200" in lines[k] and "unparsed" in lines[k]
    assert "vs majority-class baseline" in lines[k + 1] and "vs uniform chance 1/10: 0.1000" in lines[k + 2]
