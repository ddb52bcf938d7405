"""The synthesised live questions' home (musiceval/protocols/synth/): the exact-answer rules, and
:class:`SynthProtocol` scoring an :class:`AnswerSet` (hand-built, or generated answers through
``GenerationResult.answer_set``) per condition and task."""
from __future__ import annotations

import math

import pytest

from musiceval.data.answers import AnswerSet
from musiceval.generate import GenerationResult
from musiceval.protocols.base import ProtocolSettings
from musiceval.protocols.synth import SynthProtocol
from musiceval.protocols.synth.metrics import CHANCE, answer_is_correct, first_number
from musiceval.records import Item, ItemFailure, Response

INSTRUMENT = Item(id="i", question="?", choices=("piano", "violin", "flute", "trumpet"), answer="violin",
                  meta={"task": "instrument"})
KEY = Item(id="k", question="?", answer="D minor", meta={"task": "key"})
TEMPO = Item(id="t", question="?", answer="120", meta={"task": "tempo"})
PITCH = Item(id="p", question="?", answer="60", meta={"task": "pitch"})


@pytest.mark.parametrize("item,text,expected", [
    (INSTRUMENT, "It is a violin.", True),
    (INSTRUMENT, "a piano", False),
    (INSTRUMENT, "violin or piano", False),  # two instruments named: not one answer
    (KEY, "The key is D minor.", True),
    (KEY, "D major", False),
    (KEY, "no idea", False),
    (TEMPO, "About 122 BPM", True),  # within 4 %
    (TEMPO, "130 bpm", False),
    (TEMPO, "fast", False),
    (PITCH, "MIDI note 60", True),
    (PITCH, "It is C4", True),
    (PITCH, "It is D4", False),
    (PITCH, "C4 or E4", False),
])
def test_answer_is_correct(item, text, expected):
    assert answer_is_correct(item, text, tempo_tolerance=0.04) is expected


def test_unknown_task_and_chance_table():
    with pytest.raises(ValueError, match="unknown task 'loudness'"):
        answer_is_correct(Item(id="x", question="?", meta={"task": "loudness"}), "loud", tempo_tolerance=0.04)
    assert CHANCE == {"instrument": 0.25, "key": 1 / 24}
    assert first_number("at 97.5 bpm, not 80") == 97.5 and first_number("none") is None


def _response(item: Item, text: str, condition: str = "correct", chunk: int = 0) -> Response:
    return Response(item.id, condition, "m", "?", text, {"chunk": chunk})


def _protocol(responses, *, failures=(), tolerance=0.04, conditions=("correct", "noise")) -> SynthProtocol:
    answers = AnswerSet(items=[INSTRUMENT, KEY, TEMPO, PITCH], responses=list(responses), failures=list(failures),
                        model="m", source="hand-built", format="generated")
    options = {"tempo_tolerance": tolerance, "conditions": conditions}
    return SynthProtocol.from_answers(answers, ProtocolSettings(options=options))


def test_accuracy_per_task_and_condition():
    run = _protocol([_response(INSTRUMENT, "a violin"), _response(KEY, "D major"), _response(TEMPO, "122 bpm"),
                     _response(PITCH, "C4"), _response(INSTRUMENT, "a piano", "noise")])
    assert run.name == "live" and run.conditions == ("correct", "noise") and run.metrics == ("accuracy",)
    correct = run.scores("accuracy", "correct")
    assert correct.ids == ("i", "k", "t", "p") and correct.values.tolist() == [1.0, 0.0, 1.0, 1.0]
    assert correct.groups == ("i", "k", "t", "p") and correct.metric == "accuracy"
    assert run.scores("accuracy", "correct", tasks=("key",)).values.tolist() == [0.0]
    assert run.scores("accuracy", "noise", tasks=("instrument",)).values.tolist() == [0.0]
    rows = {(r["condition"], r["task"]): (r["n"], r["accuracy"]) for r in run.accuracy_table()}
    assert rows[("correct", "instrument")] == (1, 1.0) and rows[("correct", "key")] == (1, 0.0)
    assert rows[("noise", "instrument")] == (1, 0.0) and rows[("noise", "key")][0] == 0
    assert math.isnan(rows[("noise", "key")][1])
    assert run.evaluate()["accuracy"] == 0.75
    scores = run.scores("accuracy", "correct", tasks=tuple(CHANCE))
    assert run.uniform_chance(scores) == (1 / 4 + 1 / 24) / 2


def test_the_tempo_tolerance_comes_from_the_options():
    answers = [_response(TEMPO, "126 bpm")]  # 5 % off 120
    assert _protocol(answers, tolerance=0.04).scores("accuracy", tasks=("tempo",)).values.tolist() == [0.0]
    assert _protocol(answers, tolerance=0.06).scores("accuracy", tasks=("tempo",)).values.tolist() == [1.0]
    with pytest.raises(ValueError, match=r"hand-built: SynthProtocol needs options\['tempo_tolerance'\].*\[live\]"):
        SynthProtocol.from_answers(AnswerSet(items=[TEMPO], source="hand-built"), ProtocolSettings())


def test_a_missing_response_is_a_failure_with_its_reason_not_dropped():
    run = _protocol([_response(INSTRUMENT, "a violin"), _response(KEY, "D minor", chunk=1)],
                    failures=[ItemFailure("t", "correct chunk 0: server returned no message content")])
    s = run.scores("accuracy", "correct")
    assert s.ids == ("i",) and s.values.tolist() == [1.0]  # a later chunk is not the item's answer
    reasons = {f.item_id: f.reason for f in s.failures}
    assert reasons == {"k": "correct: no response", "t": "correct chunk 0: server returned no message content",
                       "p": "correct: no response"}
    evaluated = run.evaluate()
    assert evaluated["n"] == 1 and evaluated["n_failed"] == 3
    noise = run.scores("accuracy", "noise")  # asked, never answered: every item a failure
    assert noise.n == 0 and len(noise.failures) == 4


def test_responses_for_unknown_items_and_unknown_tasks():
    stray = Response("zz", "correct", "m", "?", "violin", {"chunk": 0})
    run = _protocol([_response(INSTRUMENT, "violin"), stray])
    assert [f.item_id for f in run.failures] == ["zz"]
    with pytest.raises(KeyError, match="no responses under condition 'random'"):
        run.scores("accuracy", "random")
    loud = Item(id="x", question="?", meta={"task": "loudness"})
    with pytest.raises(ValueError, match=r"item 'x' has task 'loudness'.*instrument, key, tempo, pitch"):
        SynthProtocol.from_answers(AnswerSet(items=[loud]), ProtocolSettings(options={"tempo_tolerance": 0.04}))


def test_generated_answers_are_the_answer_set_a_recorded_file_gives():
    result = GenerationResult(responses=[_response(INSTRUMENT, "violin"), _response(KEY, "D minor", "noise")],
                              failures=[ItemFailure("t", "noise: the random condition needs two clips")])
    answers = result.answer_set([INSTRUMENT, KEY, TEMPO, PITCH], model="hf:tiny", source="manifest.jsonl")
    assert isinstance(answers, AnswerSet) and answers.format == "generated"
    assert (answers.model, answers.source, answers.failures) == ("hf:tiny", "manifest.jsonl", result.failures)
    assert [i.id for i in answers.items] == ["i", "k", "t", "p"] and answers.responses == result.responses
    run = SynthProtocol.from_answers(answers, ProtocolSettings(options={"tempo_tolerance": 0.04}))
    assert run.conditions == ("correct", "noise") and run.model == "hf:tiny"
    assert run.scores("accuracy", "noise", tasks=("tempo",)).failures == (result.failures[0],)


def test_the_chance_gate_scores_a_real_models_answers_through_the_protocol():
    """The gpu-marked gate of musiceval/protocols/synth/gates.py, run on answers made up for the test:
    every instrument and key question answered right but one left unanswered (a counted failure)."""
    from musiceval.audio import SYNTHESISED_AUDIO as AUDIO
    from musiceval.gates import Gate, GateConfig
    from musiceval.generate import load_manifest
    from musiceval.models.base import GenerationSettings
    from musiceval.protocols.synth import gates

    items, _ = load_manifest(AUDIO / "manifest.jsonl")
    asked = [i for i in items if i.meta["task"] in CHANCE]
    answered = [_response(i, str(i.answer)) for i in asked[1:]]
    first = GenerationResult(responses=answered, failures=[ItemFailure(asked[0].id, "correct chunk 0: timeout")])
    run = gates.LiveRun("hf:made-up", items, first, first, GenerationSettings(), real_model=True)
    rows: list[dict] = []
    thresholds = {"live": {"tempo_tolerance": 0.04, "min_answered_rate": 1.0}}
    gates.test_a_real_model_beats_chance_on_instruments_and_keys(run, Gate(GateConfig(), sink=rows.append), thresholds)
    (row,) = [r for r in rows if r["type"] == "gate"]
    assert (row["name"], row["outcome"], row["n"], row["n_failed"]) == (
        "live: instrument and key accuracy beats chance", "PASS", len(asked) - 1, 1)
    chance = sum(CHANCE[i.meta["task"]] for i in asked[1:]) / (len(asked) - 1)
    assert row["estimate"] == pytest.approx(1.0 - chance)  # accuracy 1, above the mean uniform-guess rate
