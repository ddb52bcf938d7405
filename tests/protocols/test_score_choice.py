"""``musiceval score choice`` and the live multiple-choice run (with a fake Music LM)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from musiceval.cli import main
from musiceval.vocab.choice_prompts import build_prompts
from musiceval.vocab.choice_prompts import ANSWER_TYPE, DISTRACTOR_TYPES
from musiceval.gates import Gate, GateConfig
from musiceval.metrics.choice import LETTERS
from musiceval.models.base import Answer
from musiceval.records import Item, Outcome
from musiceval.protocols import ProtocolSettings, load_protocol
from musiceval.protocols.choice.engine import generate_choice_answers, score_records
from musiceval.protocols.base import PARSE_RATE
from musiceval.protocols.choice import ChoiceProtocol
from musiceval.data.muchomusic import ChoiceRecord

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "choice" / "dev_midashenglm.jsonl"


def _cli(capsys, *argv) -> tuple[int, dict | None, str]:
    code = main(["score", "choice", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


@pytest.mark.parametrize("matcher,ifr", [("muchomusic", 0.995), ("strict", 1.0)])
def test_cli_scores_the_dasheng_fixture(capsys, matcher, ifr):
    code, out, _ = _cli(capsys, "--format", "dasheng", str(FIXTURE), "--matcher", matcher, "--json")
    assert code == 0
    assert out["protocol"] == "choice" and out["n"] == 200 and out["n_failed"] == 0
    # accuracy = share of the 200 recorded answers equal to the answer letter (computed here)
    rows = [json.loads(line) for line in FIXTURE.read_text("utf-8").splitlines()]
    expected = sum(r["model_output"].strip()[-1] == r["answer"] for r in rows) / len(rows)
    assert out["metrics"]["accuracy"] == pytest.approx(expected)
    assert out["metrics"]["ifr"] == pytest.approx(ifr)
    assert out["metrics"]["unanswered"] == pytest.approx(1 - ifr)
    assert out["metrics"]["per_dimension"] == {}


def test_cli_counts_bad_items_and_writes_per_item(capsys, tmp_path):
    good = {"item_id": "q1", "question": "Which?", "choices": ["alpha", "beta", "gamma", "delta"], "answer": "C", "text": "(C)",
            "knowledge": ["melody"], "reasoning": ["lyrics"]}
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join([
        json.dumps(good),
        json.dumps({**good, "item_id": "q2", "text": "A or B"}),
        json.dumps({**good, "item_id": "q3", "choices": ["alpha", "beta", "gamma"]}),
        json.dumps({**good, "item_id": "q4", "answer": None}),
        json.dumps({**good, "item_id": "q5", "choices": ["alpha", "Alpha", "gamma", "delta"]}),
        json.dumps({**good, "item_id": "q6", "answer": "F"}),
        "{oops",
    ]), encoding="utf-8")
    per_item = tmp_path / "per_item.jsonl"
    code, out, _ = _cli(capsys, str(path), "--json", "--per-item", str(per_item))
    assert code == 0 and out["n"] == 2 and out["n_failed"] == 5
    assert out["metrics"]["accuracy"] == 0.5 and out["metrics"]["ifr"] == 0.5
    assert out["metrics"]["per_dimension"]["knowledge"]["melody"]["accuracy"] == 0.5
    assert out["metrics"]["per_dimension"]["reasoning"]["lyrics"]["n"] == 2
    rows = [json.loads(line) for line in per_item.read_text().splitlines()]
    errors = {r["item_id"]: r["error"] for r in rows if "error" in r}
    assert set(errors) == {"q3", "q4", "q5", "q6", "r.jsonl:7"}
    assert [r["predicted"] for r in rows if "error" not in r] == ["C", None]


def test_cli_scores_the_official_evaluation_json(capsys, tmp_path):
    canonical = ["Pop music", "Reggae", "Latin rock", "Ska"]
    rows = []
    for i, (orders, output) in enumerate([([3, 0, 2, 1], "B"), ([0, 1, 2, 3], "The correct answer is: C"),
                                          ([1, 0, 2, 3], "reggae, surely")]):
        rows.append({"id": 415600 + i, "prompt": "Question: Which genre?", "answers": [canonical[j] for j in orders],
                     "answer_orders": orders, "reasoning": ["genre and style"], "knowledge": ["melody"] * (i % 2),
                     "genre": "Reggae", "dataset": "sdd", "audio_path": "x.mp3", "model_output": output})
    path = tmp_path / "example_file.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    code, out, _ = _cli(capsys, "--format", "muchomusic", str(path), "--json")
    assert code == 0 and out["n"] == 3 and out["n_failed"] == 0
    assert out["metrics"]["accuracy"] == pytest.approx(1 / 3)  # B is right; C and "reggae" (A) are wrong
    assert out["metrics"]["ifr"] == 1.0
    assert out["metrics"]["per_dimension"]["reasoning"]["genre and style"]["n"] == 3
    assert out["metrics"]["per_dimension"]["knowledge"]["melody"] == {"n": 1, "accuracy": 0.0, "ifr": 1.0,
                                                                      "unanswered": 0.0}


def test_cli_input_errors_exit_2(capsys, tmp_path):
    code, out, err = _cli(capsys, str(tmp_path / "missing.jsonl"), "--json")
    assert code == 2 and out is None and "file not found" in err
    code, out, err = _cli(capsys, "--json")
    assert code == 2 and "no FILE given" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    code, out, err = _cli(capsys, "--format", "dasheng", str(empty), "--json")
    assert code == 2 and "no records" in err
    code, out, err = _cli(capsys, "--format", "muchomusic", str(empty), "--json")
    assert code == 2 and "not JSON" in err


def test_runs_conditions_and_settings_are_reported(tmp_path):
    items = [Item(id=f"q{i}", question=f"Q{i}?", choices=(f"r{i}", f"n{i}", f"t{i}", f"f{i}"), answer="A",
                  meta={"distractor_types": (ANSWER_TYPE, *DISTRACTOR_TYPES)}) for i in range(10)]
    by_id = {i.id: i for i in items}
    rows = []
    for p in build_prompts(items, runs=3, n_examples=1, seed=0):
        right = p.run < 2 or int(p.item_id[1:]) % 2 == 0  # run 2 gets half wrong
        letter = p.answer if right else LETTERS[(LETTERS.index(p.answer) + 1) % 4]
        rows.append(p.to_record(by_id[p.item_id], letter))
        rows.append(p.to_record(by_id[p.item_id], "I cannot tell", condition="noise"))
    for p in build_prompts(items, runs=1, n_examples=0, distractors=("incorrect_but_related",), seed=0):
        rows.append(p.to_record(by_id[p.item_id], p.answer))
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    result = load_protocol("choice", path, "musiceval-choice", ProtocolSettings(options={"matcher": "muchomusic"})).result
    metrics = result.metrics()
    assert metrics["accuracy"] == pytest.approx(25 / 30)  # the published setting only
    assert metrics["runs"]["accuracy"]["mean"] == pytest.approx(25 / 30)
    assert metrics["runs"]["accuracy"]["min"] == 0.5 and metrics["runs"]["accuracy"]["n_runs"] == 3
    assert metrics["per_distractor_setting"]["incorrect_but_related"]["accuracy"] == 1.0
    assert metrics["per_condition"]["noise"]["ifr"] == 0.0
    acc = result.item_scores("accuracy")
    assert acc.n == 30 and len(set(acc.ids)) == 30
    noise = result.item_scores("accuracy", "noise")
    assert set(noise.ids) == set(acc.ids)  # conditions pair up item by item
    rows_ = Gate(GateConfig(n_resamples=500))
    assert rows_.mcnemar_greater(acc, noise, name="drop").outcome is Outcome.PASS


# --------------------------------------------------------------------------- live run, fake model

SR = 8000


class ToneModel:
    """A fake Music LM that 'listens': it knows which clip it hears from the tone's pitch and
    answers that clip's correct option; with no audio or with noise it answers (A)."""

    spec, revision, sample_rate, max_audio_seconds, chunk_seconds = "tone:fake", "1", SR, None, None

    def __init__(self, answer_of_freq: dict[int, str]):
        self.answer_of_freq = answer_of_freq
        self.calls = 0

    def generate(self, requests, settings):
        self.calls += len(requests)
        out = []
        for r in requests:
            options = re.findall(r"\(([A-D])\) (.*?) (?=\(|\n)", r.prompt.rsplit("Question:", 1)[-1])
            guess = "A"
            if r.audio is not None:
                spectrum = np.abs(np.fft.rfft(r.audio))
                freq = int(round(np.argmax(spectrum) * SR / len(r.audio)))
                text = self.answer_of_freq.get(freq)
                guess = next((letter for letter, opt in options if opt == text), "A")
            out.append(Answer(text=f"({guess})"))
        return out

    def close(self):
        pass


def test_live_run_passes_the_audio_attention_test(tmp_path):
    freqs = [200 + 50 * i for i in range(24)]
    items, answer_of_freq = [], {}
    for i, f in enumerate(freqs):
        t = np.arange(SR) / SR
        sf.write(tmp_path / f"clip{i}.wav", 0.5 * np.sin(2 * np.pi * f * t), SR)
        items.append(Item(id=f"q{i}", question=f"What is heard in clip {i}?", audio=f"clip{i}.wav",
                          choices=(f"right{i}", f"near{i}", f"true{i}", f"far{i}"), answer="A", group=f"clip{i}",
                          meta={"distractor_types": (ANSWER_TYPE, *DISTRACTOR_TYPES)}))
        answer_of_freq[f] = f"right{i}"
    items.append(Item(id="broken", question="?", audio="missing.wav", choices=("a", "b", "c", "d"), answer="A"))
    model = ToneModel(answer_of_freq)
    answers = generate_choice_answers(model, items, data_dir=tmp_path, conditions=("correct", "noise", "random", "text_only"),
                                      runs=2, n_examples=1, model_name="tone", source="live tones")
    # the clip that cannot be read fails under correct and noise, and as some item's random partner
    assert {"broken#run0", "broken#run1"} <= {f.item_id for f in answers.failures}
    assert all("missing.wav" in f.reason for f in answers.failures)
    assert len(answers.responses) + len(answers.failures) == 25 * 2 * 4  # every (item, run, condition) accounted for
    run = ChoiceProtocol.from_answers(answers, ProtocolSettings(options={"matcher": "strict"}))
    assert (run.model, run.source) == ("tone", "live tones")
    metrics = run.result.metrics()
    assert metrics["runs"]["accuracy"]["mean"] == 1.0 and metrics["ifr"] == 1.0
    assert metrics["per_condition"]["random"]["accuracy"] < 0.5
    gate = Gate(GateConfig(n_resamples=500))
    for condition in ("noise", "random", "text_only"):
        outcome = gate.mcnemar_greater(run.scores("accuracy"), run.scores("accuracy", condition),
                                       name=f"drop {condition}").outcome
        assert outcome is Outcome.PASS

    # the protocol path gives the per-record values the live gates computed by hand before:
    # each answer matched with score_records against the options in the order it saw them
    by_hand = score_records([ChoiceRecord(item, r, run=r.meta["run"]) for item, r in zip(answers.items, answers.responses)],
                            "strict", answers.failures)
    for condition in ("correct", "noise", "random", "text_only"):
        for metric, old in (("accuracy", "accuracy"), (PARSE_RATE, "ifr")):
            new, before = run.scores(metric, condition), by_hand.item_scores(old, condition)
            assert new.ids == before.ids and new.groups == before.groups
            assert new.values.tolist() == before.values.tolist()
    assert [f.reason for f in run.failures] == [f.reason for f in by_hand.failures]
    assert run.result.metrics() == by_hand.metrics()


def test_accuracy_per_task_where_the_answer_file_names_tasks(tmp_path):
    # AIR-Bench foundation reports accuracy per task: a file whose rows name their task gets a "task"
    # family beside the knowledge and reasoning dimensions; a bad task field is a counted failure
    def row(i, task, right):
        return {"item_id": f"q{i}", "question": "Which?", "choices": ["a", "b", "c", "d"], "answer": "A",
                "text": "A" if right else "B", "group": f"clip{i}", **({"task": task} if task is not None else {})}

    rows = [row(0, "genre", True), row(1, "genre", False), row(2, "pitch", True), row(3, "pitch", True),
            row(4, "", True), row(5, 7, True)]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    result = load_protocol("choice", path, "musiceval-choice", ProtocolSettings(options={"matcher": "strict"})).result
    per_task = result.metrics()["per_dimension"]["task"]
    assert {t: b["accuracy"] for t, b in per_task.items()} == {"genre": 0.5, "pitch": 1.0}
    assert sorted(f.item_id for f in result.failures) == ["q4", "q5"]
    assert all("field 'task' must be a non-empty string" in f.reason for f in result.failures)

    plain = tmp_path / "plain.jsonl"
    plain.write_text("\n".join(json.dumps(row(i, None, True)) for i in range(3)), encoding="utf-8")
    result = load_protocol("choice", plain, "musiceval-choice", ProtocolSettings(options={"matcher": "strict"})).result
    assert "task" not in result.metrics()["per_dimension"]


def test_items_published_with_two_or_three_options_count_in_the_headline_when_declared(tmp_path):
    # MMAU, MMAR and AIR-Bench foundation publish items with two to four options: declared
    # options_as_published, every item is in the headline; otherwise (MuChoMusic) an item with
    # fewer than four options is a distractor ablation, reported apart
    types = {2: ["answer", "incorrect_but_related"], 3: ["answer", "incorrect_but_related", "correct_but_unrelated"]}

    def row(i, n, right):
        return {"item_id": f"q{i}", "question": "Which?", "choices": ["a", "b", "c", "d"][:n], "answer": "A",
                "text": "A" if right else "B", **({"distractor_types": types[n]} if n < 4 else {})}

    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [row(0, 4, True), row(1, 4, True), row(2, 2, False),
                                                       row(3, 3, False)]), encoding="utf-8")

    def headline(**options):
        protocol = load_protocol("choice", path, "musiceval-choice",
                                 ProtocolSettings(options={"matcher": "strict", **options}))
        return protocol.result.metrics()["accuracy"], protocol.result.item_scores("accuracy").n

    assert headline() == (1.0, 2)
    assert headline(options_as_published=True) == (0.5, 4)
