"""The closed-question variants of factual QA (``musiceval score factual --answers true-false|binary``,
:mod:`musiceval.protocols.factual.variants`) with K sampled answers per item (``musiceval generate
--repeats K``; docs/evaluate-your-model.md, "Sampled answers"): every repeat is scored as the item
``<id>#r<k>`` in its item's clip, the permutation null moves an item's repeats together, the binary
p-value does not count repeats as independent items, and one answer per item scores as before."""
from __future__ import annotations

import json

import numpy as np
import pytest

from musiceval.extraction import load_vocabulary
from musiceval.metrics.sets import permutation_null_f1
from musiceval.protocols.factual.engine import rule_extractor
from musiceval.protocols.factual.variants import score_binary, score_true_false
from musiceval.records import Item
from musiceval.stats import binomial_test_greater
from musiceval.suite.repeats import agreement
from musiceval.vocab.factual_prompts import variant_items
from tests.protocols.cli_args import score

VOCAB = load_vocabulary("musicnet-instruments")
TABLE = ["piano", "violin", "cello"]


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def generated(asked, answer, repeats):
    """``musiceval generate --repeats K --out`` rows: repeat by repeat, ``repeat`` on the row and in meta
    (K = 1: neither, as ``musiceval.suite.repeats.each_repeat`` returns one repeat as asked)."""
    tag = (lambda r: {"repeat": r}) if repeats > 1 else (lambda r: {})
    return [{"item_id": it.id, "condition": "correct", "model": "m", "prompt": it.question, "text": answer(it, r),
             "meta": {"chunk": 0, "n_chunks": 1, **tag(r)}, **tag(r)} for r in range(repeats) for it in asked]


def manifest(path, asked):
    return write(path, [{"id": it.id, "question": it.question, "audio": it.audio, "labels": list(it.labels),
                         "group": it.group, **dict(it.meta)} for it in asked])


def items():  # x and y are two questions about one clip; z its own clip
    return [Item("x", "q", audio="a.wav", labels=("piano", "violin"), group="clipA"),
            Item("y", "q", audio="a.wav", labels=("cello",), group="clipA"),
            Item("z", "q", audio="z.wav", labels=("piano",), group="clipZ")]


def tf_records(answers, repeats):
    """``(where, record)`` rows of the true/false table, as ``read_records`` gives them."""
    asked = variant_items(items(), "true-false", "instrument", TABLE)
    return [(f"r.jsonl:{k}", {**row, **dict(it.meta), "labels": list(it.labels), "group": it.group})
            for k, (row, it) in enumerate(zip(generated(asked, answers, repeats), asked * repeats))]


def tf_answer(it, r):  # repeat 0: x says no to violin; repeat 1: x says yes to everything
    yes = {0: {"x#piano", "y#cello", "z#piano"}, 1: {"x#piano", "x#violin", "x#cello", "y#cello", "z#piano"}}[r]
    return "Yes." if it.id in yes else "No."


def test_true_false_scores_every_repeat_as_an_item_of_its_clip(tmp_path):
    asked = variant_items(items(), "true-false", "instrument", TABLE)
    answers = write(tmp_path / "r.jsonl", generated(asked, tf_answer, 2))
    out = score("factual", answers, "--vocab", "musicnet-instruments", "--answers", "true-false", "--n-permutations", "50",
                "--manifest", manifest(tmp_path / "m.jsonl", asked))
    assert out.failures == []  # not "'cello' asked twice"
    m = out.as_json()["metrics"]
    assert m["n"] == 6 and m["n_cells"] == 18
    f1 = {row["item_id"]: row["f1"] for row in out.per_item}
    # x: {piano} vs {piano, violin} -> 2/3, then {piano, violin, cello} -> 4/5; y and z right in both repeats
    assert f1 == pytest.approx({"x#r0": 2 / 3, "y#r0": 1.0, "z#r0": 1.0, "x#r1": 0.8, "y#r1": 1.0, "z#r1": 1.0})
    assert "the repeats of an item together" in out.as_json()["chance"]["method"]


def test_true_false_repeats_keep_their_item_and_clip_and_move_together():
    result = score_true_false(tf_records(tf_answer, 2), VOCAB, seed=3, n_permutations=200)
    f1 = result.scores["f1"]
    assert f1.ids == ("x#r0", "y#r0", "z#r0", "x#r1", "y#r1", "z#r1")
    assert f1.groups == ("clipA", "clipA", "clipZ") * 2  # repeats within items within clips
    assert result.repeat_of == {f"{i}#r{r}": i for i in "xyz" for r in (0, 1)}
    yes = [row["yes"] for row in result.per_item]
    truths = [list(it.labels) for it in items()] * 2
    # the null of whole items: every row of x meets one other item's truth, never another repeat's
    assert np.array_equal(result.null_f1, permutation_null_f1(yes, truths, n_permutations=200, seed=3,
                                                               items=["x", "y", "z"] * 2))


def test_true_false_identical_repeats_have_the_null_of_one_answer_per_item():
    one = score_true_false(tf_records(lambda it, r: tf_answer(it, 0), 1), VOCAB, seed=5, n_permutations=300)
    three = score_true_false(tf_records(lambda it, r: tf_answer(it, 0), 3), VOCAB, seed=5, n_permutations=300)
    assert three.metrics["correct"]["n"] == 3 * one.metrics["correct"]["n"]
    assert np.array_equal(three.null_f1, one.null_f1)


def binary_rows(repeats, right):
    many = [Item(f"i{k}", "q", audio=f"{k // 2}.wav", labels=(lab,), group=f"clip{k // 2}")
            for k, lab in enumerate(["piano", "cello", "flute", "oboe", "horn", "piano", "cello", "flute"])]
    asked = variant_items(many, "binary", "instrument", ["piano", "cello", "flute", "oboe", "horn"], seed=1)

    def answer(it, r):
        wrong = [o for o in it.meta["options"] if o != it.labels[0]][0]
        return f"It is a {it.labels[0] if right(it, r) else wrong}."

    return asked, answer


def test_binary_scores_every_repeat_as_an_item_of_its_clip(tmp_path):
    asked, answer = binary_rows(2, lambda it, r: it.id != "i3" or r == 1)  # i3 flips between repeats
    answers = write(tmp_path / "r.jsonl", generated(asked, answer, 2))
    out = score("factual", answers, "--vocab", "musicnet-instruments", "--answers", "binary",
                "--manifest", manifest(tmp_path / "m.jsonl", asked))
    assert out.failures == []  # not "item ids must be unique"
    m = out.as_json()["metrics"]
    assert m["n"] == 16 and m["accuracy"] == pytest.approx(15 / 16) and m["n_true_first"] == 8
    accuracy = {row["item_id"]: row["accuracy"] for row in out.per_item}
    assert accuracy["i3#r0"] == 0.0 and accuracy["i3#r1"] == 1.0 and len(accuracy) == 16


def test_binary_repeats_keep_their_clip_and_identical_repeats_add_no_evidence():
    asked, answer = binary_rows(1, lambda it, r: it.id != "i3")

    def result(repeats):
        rows = [(f"r:{k}", {**row, **dict(it.meta), "labels": list(it.labels), "group": it.group})
                for k, (row, it) in enumerate(zip(generated(asked, answer, repeats), asked * repeats))]
        return score_binary(rows, VOCAB, rule_extractor(VOCAB), seed=2)

    one, two, five = result(1), result(2), result(5)
    acc = two.scores["accuracy"]
    assert acc.groups == tuple(f"clip{k // 2}" for k in range(8)) * 2 and acc.ids[:2] == ("i0#r0", "i1#r0")
    assert two.repeat_of["i7#r1"] == "i7"
    # one answer per item: the exact binomial test, as before
    assert one.metrics["chance"]["p_value"] == binomial_test_greater(7, 8, 0.5)
    # K identical answers are not K independent questions: the p-value does not shrink with K
    assert two.metrics["chance"]["p_value"] == five.metrics["chance"]["p_value"]
    assert two.metrics["chance"]["p_value"] > binomial_test_greater(14, 16, 0.5)
    assert "clustered sign-flip" in two.metrics["chance"]["method"]


def test_agreement_across_repeats_reads_a_variant_result():
    asked, answer = binary_rows(2, lambda it, r: it.id != "i3" or r == 1)
    rows = [(f"r:{k}", {**row, **dict(it.meta), "labels": list(it.labels), "group": it.group})
            for k, (row, it) in enumerate(zip(generated(asked, answer, 2), asked * 2))]
    binary = score_binary(rows, VOCAB, rule_extractor(VOCAB))
    found = agreement(binary.repeat_of, binary.repeat_texts, binary.scores["accuracy"])
    assert (found.items, found.repeats, found.identical, found.flips) == (8, 2, 7, 1)
    tf = score_true_false(tf_records(tf_answer, 2), VOCAB, n_permutations=20)
    found = agreement(tf.repeat_of, tf.repeat_texts, tf.scores["f1"])
    assert (found.items, found.identical, found.flips) == (3, 2, None)
    assert found.spread == pytest.approx((0.8 - 2 / 3) / 3)


def test_one_answer_per_item_scores_as_before():
    """Without ``repeat`` rows: the null is the plain permutation of yes-sets across rows (the call
    before repeats were read), the binary p-value the exact binomial test, the methods' words as before."""
    tf = score_true_false(tf_records(tf_answer, 1), VOCAB, seed=7, n_permutations=100)
    yes = [row["yes"] for row in tf.per_item]
    assert np.array_equal(tf.null_f1, permutation_null_f1(yes, [list(it.labels) for it in items()], n_permutations=100,
                                                          seed=7))
    assert tf.metrics["chance"]["method"] == "permutation of yes-sets across items (100, seed 7)"
    assert tf.scores["f1"].ids == ("x", "y", "z") and tf.repeat_of == {}
    asked, answer = binary_rows(1, lambda it, r: it.id not in ("i3", "i5"))
    rows = [(f"r:{k}", {**row, **dict(it.meta), "labels": list(it.labels), "group": it.group})
            for k, (row, it) in enumerate(zip(generated(asked, answer, 1), asked))]
    binary = score_binary(rows, VOCAB, rule_extractor(VOCAB), seed=9)
    assert binary.metrics["chance"] == {"accuracy": 0.5, "p_value": binomial_test_greater(6, 8, 0.5)}
    assert binary.scores["accuracy"].ids == tuple(f"i{k}" for k in range(8))


def test_a_malformed_repeat_is_that_rows_failure_naming_the_field():
    rows = tf_records(tf_answer, 2)
    rows[0][1]["repeat"] = "first"
    tf = score_true_false(rows, VOCAB, n_permutations=20)
    assert "field 'repeat' must be a non-negative integer" in tf.failures[0].reason and tf.failures[0].item_id == rows[0][0]
    asked, answer = binary_rows(2, lambda it, r: True)
    brows = [(f"r:{k}", {**row, **dict(it.meta), "labels": list(it.labels)})
             for k, (row, it) in enumerate(zip(generated(asked, answer, 2), asked * 2))]
    brows[3][1]["repeat"] = -1
    binary = score_binary(brows, VOCAB, rule_extractor(VOCAB))
    assert [f.item_id for f in binary.failures] == ["r:3"] and binary.metrics["correct"]["n"] == 15
