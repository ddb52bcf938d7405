"""How every protocol reads an AnswerSet (musiceval.protocols.pairing), and the benchmark that
load_answers names on the set (the factual protocol's default vocabulary, the coverage gate)."""
from __future__ import annotations

import json

import pytest

from musiceval.data.answers import AnswerSet
from musiceval.data.formats import load_answers
from musiceval.protocols import PROTOCOLS
from musiceval.protocols.pairing import conditions, model_name, orphans, pairs
from musiceval.records import Item, Response


def _response(item_id, condition="correct", model="", text="a"):
    return Response(item_id=item_id, condition=condition, model=model, prompt="q", text=text)


def test_responses_pair_with_their_items_by_id_and_an_unknown_id_is_a_counted_failure():
    answers = AnswerSet([Item("a", "qa"), Item("b", "qb")],
                        [_response("b"), _response("zz", "noise"), _response("a"), _response("a", "random")])
    assert [(i.id, r.item_id, r.condition) for i, r in pairs(answers)] == [
        ("b", "b", "correct"), ("a", "a", "correct"), ("a", "a", "random")]
    assert [(f.item_id, f.reason) for f in orphans(answers)] == [("zz", "noise: response for unknown item 'zz'")]


def test_items_aligned_with_responses_pair_by_position_so_each_run_keeps_its_own_options():
    """A multiple-choice file asks one item twice with the options shuffled: items[k] is the
    question responses[k] saw, and the same id twice is not an orphan."""
    first, second = Item("q1", "?", choices=("x", "y"), answer="A"), Item("q1", "?", choices=("y", "x"), answer="B")
    answers = AnswerSet([first, second], [_response("q1"), _response("q1")])
    assert [i for i, _ in pairs(answers)] == [first, second]
    assert orphans(answers) == []


def test_conditions_put_correct_first_then_the_file_order():
    answers = AnswerSet([Item("a", "q")], [_response("a", "noise"), _response("a", "random"), _response("a"),
                                           _response("a", "noise")])
    assert conditions(answers) == ("correct", "noise", "random")
    assert conditions(AnswerSet()) == ()


@pytest.mark.parametrize("model, responses, expected", [
    ("Qwen2-Audio", [_response("a", model="other")], "Qwen2-Audio"),
    ("", [_response("a", model="b-model"), _response("a", model="unknown"), _response("a", model="a-model")],
     "a-model+b-model"),
    ("", [_response("a", model="unknown")], "model"),
])
def test_the_model_name_is_the_sets_else_the_responses_else_model(model, responses, expected):
    assert model_name(AnswerSet([Item("a", "q")], responses, model=model)) == expected


def _dasheng(path, dataset):
    rows = [{"dataset_name": dataset, "audio": f"{label}_{k}.wav", "label": [label], "prompt": "What's the music instrument?",
             "model_output": label, "model_name": "M"} for k, label in enumerate(["bass", "guitar", "organ", "flute"])]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_load_answers_names_the_benchmark_and_a_factual_run_takes_its_vocabulary(tmp_path):
    answers = load_answers(_dasheng(tmp_path / "nsynth.jsonl", "NSynth"), protocol="factual")
    assert answers.benchmark is not None and answers.benchmark.name == "NSynth test"
    assert answers.benchmark.items == 4096
    run = PROTOCOLS.get("factual").from_answers(answers)
    assert run.vocab.name == "nsynth"
    assert run.scores("f1").mean() == pytest.approx(1.0)


def test_a_file_of_no_known_benchmark_names_none_and_factual_asks_for_a_vocabulary(tmp_path):
    answers = load_answers(_dasheng(tmp_path / "other.jsonl", "Other"), protocol="factual")
    assert answers.benchmark is None
    with pytest.raises(ValueError, match="no vocabulary; set the factual option 'vocab'"):
        PROTOCOLS.get("factual").from_answers(answers)
