"""Answer-blind files never pass: chance is the strongest strategy that ignores the question and the
audio (docs/gate-your-model.md, "What the verdict means"), and the model must also beat its own answers moved to other
items. Built from real third-party answer files in ../shared/data (real keys, real model outputs):
constant answers, answers shifted or rotated to the wrong items, letters or labels drawn from the
key's own prior; the real files and an all-correct file pass.

Chance is ONE gate per metric, "beats the strongest answer-blind strategy" (the intersection-union
test of every strategy's comparison: PASS only when each of them PASSes); a file passes when that
gate and "the model listens" PASS. The tests also look at each strategy's comparison on its own.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from musiceval.calibration.blind import BENCHMARKS, TAGGING_STRATEGIES, _answers, answer_set, ranking_embedder, _tags
from musiceval.gates import Gate, GateConfig
from musiceval.protocols import PROTOCOLS, ProtocolSettings, load_protocol
from musiceval.records import Outcome
from musiceval.protocols import checks

SHARED = next((p / "shared" / "data" for p in Path(__file__).resolve().parents if (p / "shared" / "data").is_dir()),
              Path(__file__).resolve().parents[2] / "shared" / "data")
CHOICE = SHARED / "muchomusic" / "dev_midashenglm.jsonl"
NSYNTH = SHARED / "nsynth" / "dev_midashenglm.jsonl"
GTZAN = SHARED / "cmi-bench" / "outputs" / "mullama" / "mullama_GTZAN.jsonl"


@pytest.fixture(autouse=True)
def _need_shared():
    if not CHOICE.is_file():
        pytest.skip(f"{SHARED} absent (../shared/data beside the repository)")


CHANCE = "chance gate"


def _gates(run, metric: str) -> dict[str, Outcome]:
    """Outcome of each strategy's comparison of ``metric`` (by the strategy's name), of the one
    chance gate (:data:`CHANCE`) and of "the model listens"."""
    gate = Gate(GateConfig())
    quiet = Gate(GateConfig())
    out = {c.name: checks.compare_with_chance(quiet, run, metric, c).outcome for c in run.chances(metric)}
    out[CHANCE] = checks.beats_chance(gate, run, metric).outcome
    listens = checks.listens(gate, run, metric)
    if listens is not None:
        out["listens"] = listens.outcome
    return out


def _passes(outcomes: dict[str, Outcome]) -> bool:
    """The file passes: the chance gate and "the model listens" PASS (the chance gate PASSes
    exactly when every strategy's comparison does)."""
    strategies = [o for name, o in outcomes.items() if name not in (CHANCE, "listens")]
    assert (outcomes[CHANCE] is Outcome.PASS) == all(o is Outcome.PASS for o in strategies)
    return outcomes[CHANCE] is Outcome.PASS and outcomes.get("listens", Outcome.PASS) is Outcome.PASS


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------- choice


def _choice_rows() -> list[dict]:
    return [json.loads(line) for line in CHOICE.read_text(encoding="utf-8").splitlines() if line.strip()]


def _choice_run(tmp_path: Path, outputs: list[str]):
    rows = [{**r, "model_output": o} for r, o in zip(_choice_rows(), outputs)]
    return load_protocol("choice", _write(tmp_path / "answers.jsonl", rows))


def test_the_real_file_and_an_all_correct_file_pass(tmp_path):
    real = load_protocol("choice", CHOICE)
    assert _passes(_gates(real, "accuracy"))
    perfect = _choice_run(tmp_path, [r["answer"] for r in _choice_rows()])
    outcomes = _gates(perfect, "accuracy")
    assert set(outcomes) == {"uniform chance 1/4", "best constant answer", "answer permutation", CHANCE, "listens"}
    assert _passes(outcomes)


@pytest.mark.parametrize("letter", "ABCD")
def test_a_constant_letter_never_passes(tmp_path, letter):
    outcomes = _gates(_choice_run(tmp_path, [f"The correct answer is: ({letter})"] * 200), "accuracy")
    # the answers equal the answer permutation on every item: FAIL exactly, whatever the key's skew
    assert outcomes["answer permutation"] is Outcome.FAIL and outcomes["listens"] is Outcome.FAIL
    assert outcomes["best constant answer"] is not Outcome.PASS and not _passes(outcomes)


def test_the_most_frequent_letter_passes_uniform_chance_but_nothing_else(tmp_path):
    keys = [r["answer"] for r in _choice_rows()]
    top = Counter(keys).most_common(1)[0][0]
    outcomes = _gates(_choice_run(tmp_path, [top] * len(keys)), "accuracy")
    assert outcomes["best constant answer"] is Outcome.FAIL  # identical to the best constant answer on every item
    assert outcomes[CHANCE] is Outcome.FAIL and not _passes(outcomes)


def test_the_chance_gate_of_an_all_d_file_names_every_strategy_and_shows_no_pass(tmp_path):
    """The report's "beats uniform chance 1/4: PASS" beside the FAILs that decide it is gone: one gate,
    named after its least favourable strategy, every strategy in its detail, no PASS anywhere."""
    rows = []
    run = _choice_run(tmp_path, ["D"] * 200)
    result = checks.beats_chance(Gate(GateConfig(), sink=rows.append), run, "accuracy")
    assert result.outcome is Outcome.FAIL and result.check == f"choice/beats_chance/MiDashengLM/{run.source}/accuracy"
    assert result.name.startswith(f"MiDashengLM {run.source} accuracy beats the strongest answer-blind strategy (")
    for name in ("uniform chance 1/4", "best constant answer", "answer permutation"):
        assert f"{name}: " in result.detail
    assert "not beaten" in result.detail and "PASS" not in result.detail and "Berger 1982" in result.test
    gates = [r for r in rows if r["type"] == "gate"]
    assert len(gates) == 1 and gates[0]["outcome"] == "FAIL"  # the strategies' comparisons are not gates
    # the per-item scores of the model and of every paired strategy, once each, under the one gate
    assert sorted(r["condition"] for r in rows if r["type"] == "scores") == [
        "answer permutation", "best constant answer", "correct"]
    assert {r["gate"] for r in rows if r["type"] != "gate"} == {result.name}


@pytest.mark.parametrize("shift", [1, 7, 100])
def test_answers_shifted_to_the_wrong_items_never_pass(tmp_path, shift):
    real = [r["model_output"] for r in _choice_rows()]
    outcomes = _gates(_choice_run(tmp_path, real[-shift:] + real[:-shift]), "accuracy")
    assert outcomes["answer permutation"] is not Outcome.PASS and outcomes["listens"] is not Outcome.PASS


@pytest.mark.parametrize("seed", range(5))
def test_letters_drawn_from_the_keys_prior_never_pass(tmp_path, seed):
    keys = [r["answer"] for r in _choice_rows()]
    drawn = np.random.default_rng(seed).choice(keys, size=len(keys))  # the key's own letter frequencies
    outcomes = _gates(_choice_run(tmp_path, list(drawn)), "accuracy")
    assert not _passes(outcomes)


# ---------------------------------------------------------------------------------------- factual


FACTUAL = ProtocolSettings(options={"vocab": "nsynth", "n_permutations": 500})


def _nsynth_rows() -> list[dict]:
    return [json.loads(line) for line in NSYNTH.read_text(encoding="utf-8").splitlines() if line.strip()]


def _factual_run(tmp_path: Path, outputs: list[str]):
    rows = [{**r, "model_output": o} for r, o in zip(_nsynth_rows(), outputs)]
    return load_protocol("factual", _write(tmp_path / "nsynth.jsonl", rows), settings=FACTUAL)


def test_factual_real_and_all_correct_files_pass(tmp_path):
    assert _passes(_gates(load_protocol("factual", NSYNTH, settings=FACTUAL), "f1"))
    perfect = _factual_run(tmp_path, [", ".join(r["label"]) for r in _nsynth_rows()])
    outcomes = _gates(perfect, "f1")
    assert set(outcomes) == {"permutation chance", "best constant label set", CHANCE, "listens"} and _passes(outcomes)


@pytest.mark.parametrize("answer", ["guitar", "bass, guitar, keyboard, organ, mallet, string, brass, reed, flute, vocal, synth lead"])
def test_factual_constant_answers_never_pass(tmp_path, answer):
    outcomes = _gates(_factual_run(tmp_path, [answer] * 300), "f1")
    assert outcomes["best constant label set"] is not Outcome.PASS and outcomes["permutation chance"] is not Outcome.PASS
    assert not _passes(outcomes)


def test_factual_answers_rotated_by_one_item_never_pass(tmp_path):
    real = [r["model_output"] for r in _nsynth_rows()]
    outcomes = _gates(_factual_run(tmp_path, real[1:] + real[:1]), "f1")
    assert outcomes["permutation chance"] is not Outcome.PASS and outcomes["listens"] is not Outcome.PASS


@pytest.mark.parametrize("seed", range(3))
def test_factual_labels_drawn_from_the_truths_prior_never_pass(tmp_path, seed):
    truths = [r["label"][0] for r in _nsynth_rows()]
    drawn = np.random.default_rng(seed).choice(truths, size=len(truths))
    assert not _passes(_gates(_factual_run(tmp_path, list(drawn)), "f1"))


# -------------------------------------------------------------------------------------------- MIR


def _gtzan_run(tmp_path: Path, responses: list[str] | None = None):
    records = json.loads(GTZAN.read_text(encoding="utf-8"))
    if responses is not None:
        records = [{**r, "response": t} for r, t in zip(records, responses)]
    path = tmp_path / "mullama_GTZAN.jsonl"
    path.write_text(json.dumps(records), encoding="utf-8")
    return load_protocol("mir", path)


def test_mir_an_all_correct_file_passes_and_a_constant_genre_does_not(tmp_path):
    truths = [r["correct_answer"] for r in json.loads(GTZAN.read_text(encoding="utf-8"))]
    assert _passes(_gates(_gtzan_run(tmp_path, truths), "accuracy"))
    outcomes = _gates(_gtzan_run(tmp_path, ["rock"] * len(truths)), "accuracy")
    assert outcomes["listens"] is Outcome.FAIL and not _passes(outcomes)


@pytest.mark.parametrize("seed", range(3))
def test_mir_correct_answers_moved_to_random_items_never_pass(tmp_path, seed):
    # (rotating by one would not do: the file is sorted by genre, so a neighbour's answer is mostly right)
    truths = [r["correct_answer"] for r in json.loads(GTZAN.read_text(encoding="utf-8"))]
    moved = list(np.random.default_rng(seed).permutation(truths))
    assert not _passes(_gates(_gtzan_run(tmp_path, moved), "accuracy"))


# ---------------------------------------------------------------------------------------- tagging

TAGGING = next(b for b in BENCHMARKS if b.tagging)


def _tagging_run(keys, answers):
    return PROTOCOLS.get("mir").from_answers(answer_set(TAGGING, keys, answers),
                                             ProtocolSettings(options={"embed": ranking_embedder(_tags(TAGGING))}))


def test_tagging_chances_are_the_strongest_constant_rankings_and_the_answer_permutation():
    keys, answers = _answers(TAGGING, "shifted", np.random.default_rng(0))
    chances = {c.name: c for c in _tagging_run(keys, answers).chances("item_roc_auc")}
    assert list(chances) == ["chance AUC 0.5", "tag-frequency ranking", "most common response", "answer permutation"]
    assert all(chances[n].kind == "baseline" and chances[n].scores.n for n in list(chances)[1:])
    assert "oracle prior" in chances["tag-frequency ranking"].description
    # the oracle prior is far stronger than a random ranking: 0.5 alone let constant files pass
    assert chances["tag-frequency ranking"].value > 0.7


def test_a_tagging_file_that_names_every_true_tag_passes():
    keys, _ = _answers(TAGGING, "shifted", np.random.default_rng(1))
    assert _passes(_gates(_tagging_run(keys, keys), "item_roc_auc"))


@pytest.mark.parametrize("strategy", list(TAGGING_STRATEGIES))
def test_answer_blind_tagging_files_never_pass(strategy):
    """One file per strategy (benchmarks/bench_calibration.py --blind runs hundreds per row)."""
    keys, answers = _answers(TAGGING, strategy, np.random.default_rng(0))
    outcomes = _gates(_tagging_run(keys, answers), "item_roc_auc")
    assert outcomes[CHANCE] is not Outcome.PASS and not _passes(outcomes)
    if strategy == "most common response":  # the file's own most common response on every item: FAIL exactly
        assert outcomes["most common response"] is Outcome.FAIL and outcomes["answer permutation"] is Outcome.FAIL
        assert outcomes["chance AUC 0.5"] is Outcome.PASS  # what used to pass such a file
