"""Answer rows carrying ``repeat`` (``musiceval run --repeats K``) read as items of their own,
``<id>#r<k>`` in the original item's group (its clip; the item id without one), with every
condition's answers of repeat k under that id; the coverage counts each item once
(docs/evaluate-your-model.md, "Sampled answers")."""
from __future__ import annotations

import json

import pytest

from musiceval.data.formats import load_answers
from musiceval.suite.config import AnswerSource
from musiceval.suite.runs import answered_ids, refuse_oversized


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def choice_rows():
    for k in range(3):
        for c in ("correct", "random"):
            yield {"item_id": "q1", "question": "Which?", "choices": ["a", "b", "c", "d"], "answer": "A",
                   "text": f"({'AB'[k % 2]})", "condition": c, "model": "m", "group": "clip1", "repeat": k}
    yield {"item_id": "q2", "question": "Which?", "choices": ["a", "b", "c", "d"], "answer": "B", "text": "(B)",
           "condition": "correct", "model": "m", "repeat": 0}


def factual_rows():
    for k in range(2):
        for c in ("correct", "random"):
            yield {"item_id": "n1", "prompt": "Which instrument?", "text": "a guitar", "labels": ["guitar"],
                   "condition": c, "model": "m", "chunk": 0, "repeat": k}


def freeform_rows():
    for k in range(2):
        yield {"id": "f1", "question": "Describe", "reference": "a calm piano", "response": f"piano {k}",
               "condition": "correct", "group": "track9", "repeat": k}


@pytest.mark.parametrize("fmt, rows, want", [
    ("musiceval-choice", choice_rows, {("q1#r0", "clip1"), ("q1#r1", "clip1"), ("q1#r2", "clip1"), ("q2#r0", "q2")}),
    ("musiceval-factual", factual_rows, {("n1#r0", "n1"), ("n1#r1", "n1")}),
    ("musiceval-freeform", freeform_rows, {("f1#r0", "track9"), ("f1#r1", "track9")}),
])
def test_each_repeat_is_an_item_in_its_items_group(tmp_path, fmt, rows, want):
    answers = load_answers(write(tmp_path / "a.jsonl", list(rows())), fmt)
    assert not answers.failures
    assert {(i.id, i.group) for i in answers.items} == want
    assert {r.item_id for r in answers.responses} == {i for i, _ in want}
    conditions = {(r.item_id, r.condition) for r in answers.responses}
    # repeat k's Random answer stays paired with its Correct one, under the same id
    assert {i for i, c in conditions if c == "random"} == {i for i, _ in want if not i.startswith(("q2", "f1"))}
    assert answered_ids(answers) == {answers.original_id(i) for i, _ in want}


def test_a_bad_repeat_is_that_lines_failure(tmp_path):
    rows = list(freeform_rows())
    rows[1]["repeat"] = -1
    answers = load_answers(write(tmp_path / "a.jsonl", rows), "musiceval-freeform")
    assert [i.id for i in answers.items] == ["f1#r0"]
    assert len(answers.failures) == 1 and "field 'repeat' must be a non-negative integer" in answers.failures[0].reason


def test_repeats_count_once_against_the_benchmarks_size(tmp_path):
    path = write(tmp_path / "a.jsonl", list(choice_rows()))
    answers = load_answers(path, "musiceval-choice")
    source = AnswerSource("m", "choice", path, "a", options={"expected_items": 2})
    refuse_oversized(answers, source)  # 2 items, asked 3 and 1 times: not 4 items of 2
    assert len(answered_ids(answers)) == 2
