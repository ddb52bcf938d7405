"""The question control (docs/gate-your-model.md, "What the verdict means": answering the question is tested wherever a
benchmark asks several questions about one clip): the derangement within clips, each protocol's
scorer of a moved answer, and the check "the model answers the question" with its not-applicable path.
"""
from __future__ import annotations

import random

import pytest

from musiceval.conditions import MIN_QUESTION_CLIPS, MIN_QUESTION_ITEMS, question_derangement
from musiceval.data.answers import AnswerSet
from musiceval.evals.model_gates import _question_control_absent
from musiceval.gates import Gate
from musiceval.protocols.base import QUESTION_PERMUTATION, ProtocolSettings
from musiceval.protocols.choice import ChoiceProtocol
from musiceval.protocols.freeform import FreeformProtocol
from musiceval.records import Item, Outcome, Response
from musiceval.protocols import checks


def _rows(clips: int, per_clip: int, singletons: int = 0):
    ids, clip_of, questions = [], [], []
    for c in range(clips):
        for q in range(per_clip):
            ids.append(f"t{c:02d}-q{q}")
            clip_of.append(f"t{c:02d}")
            questions.append(f"question {q}?")
    for s in range(singletons):
        ids.append(f"lone{s}")
        clip_of.append(f"lone{s}")
        questions.append("question 0?")
    return ids, clip_of, questions


def test_every_item_gets_another_question_about_its_own_clip():
    ids, clips, questions = _rows(clips=12, per_clip=5)
    p = question_derangement(ids, clips, questions, seed=3)
    clip_of, question_of = dict(zip(ids, clips)), dict(zip(ids, questions))
    assert sorted(p.partner) == sorted(ids) and not p.unpaired and p.clips == 12
    assert all(j != i for i, j in p.partner.items())  # never its own answer
    assert all(clip_of[j] == clip_of[i] and question_of[j] != question_of[i] for i, j in p.partner.items())
    assert sorted(p.partner.values()) == sorted(ids)  # a permutation: every answer moved exactly once


def test_the_pairing_depends_on_the_seed_and_the_ids_never_on_the_order_of_the_file():
    ids, clips, questions = _rows(clips=10, per_clip=6, singletons=3)
    rows = list(zip(ids, clips, questions))
    base = question_derangement(ids, clips, questions, seed=7)
    for k in range(5):
        random.Random(k).shuffle(rows)
        again = question_derangement(*map(list, zip(*rows)), seed=7)
        assert again == base
    assert question_derangement(ids, clips, questions, seed=8).partner != base.partner
    # one clip's pairing does not depend on the other clips being there
    only = [k for k, c in enumerate(clips) if c == "t03"]
    alone = question_derangement([ids[k] for k in only], [clips[k] for k in only], [questions[k] for k in only], seed=7)
    assert alone.partner == {i: j for i, j in base.partner.items() if i.startswith("t03")}


def test_single_question_clips_are_left_out_and_counted():
    ids, clips, questions = _rows(clips=3, per_clip=4, singletons=2)
    # a clip that asks the same question twice (two runs of it) has no other question to move to
    ids += ["r#run0", "r#run1"]
    clips += ["r", "r"]
    questions += ["Which genre?", "which  GENRE?"]
    p = question_derangement(ids, clips, questions, seed=0)
    assert p.unpaired == ("lone0", "lone1", "r#run0", "r#run1")
    assert len(p.partner) == 12 and p.clips == 3
    assert p.describe() == "12 items on 3 clips paired; 4 with no other question about their clip left out"


def test_enough_items_on_enough_clips():
    assert question_derangement(*_rows(clips=MIN_QUESTION_CLIPS, per_clip=MIN_QUESTION_ITEMS // 2), seed=0).enough
    assert not question_derangement(*_rows(clips=1, per_clip=MIN_QUESTION_ITEMS * 2), seed=0).enough
    assert not question_derangement(*_rows(clips=MIN_QUESTION_ITEMS // 2 - 1, per_clip=2), seed=0).enough


def test_bad_input_names_the_fix():
    with pytest.raises(ValueError, match="one clip and one question per item"):
        question_derangement(["a", "b"], ["c"], ["q1", "q2"], seed=0)
    with pytest.raises(ValueError, match="'a' occurs more than once.*make ids unique"):
        question_derangement(["a", "a"], ["c", "c"], ["q1", "q2"], seed=0)


# ---------------------------------------------------------------- protocols: each scores a moved answer

def _choice(answers_by_track: dict[str, list[tuple[str, str, tuple[str, ...], str]]], seed: int = 0) -> ChoiceProtocol:
    """``{track: [(id, answer letter, options, model output), ...]}`` as a choice protocol."""
    items, responses = [], []
    for track, rows in answers_by_track.items():
        for k, (iid, key, options, text) in enumerate(rows):
            items.append(Item(iid, f"{track} question {k}?", choices=options, answer=key, group=track))
            responses.append(Response(iid, "correct", "m", "", text))
    return ChoiceProtocol.from_answers(AnswerSet(items, responses, [], model="m", source="mc"),
                                       ProtocolSettings(seed=seed))


def test_choice_moves_the_answer_text_and_matches_it_against_this_questions_options():
    options = ("Jazz", "Rock", "Pop", "Folk")
    tracks = {f"t{c}": [(f"t{c}-a", "B", options, "(B)"), (f"t{c}-b", "C", options, "(B)"),
                        (f"t{c}-c", "A", ("Rock", "Jazz", "Pop", "Folk"), "Rock")] for c in range(4)}
    run = _choice(tracks)
    moved = run.question_permutation("accuracy")
    partner = run.question_partners().partner
    by_id = {iid: (key, opts, text) for rows in tracks.values() for iid, key, opts, text in rows}
    from musiceval.metrics.choice import match_muchomusic

    for i, v in zip(moved.ids, moved.values):
        key, opts, _ = by_id[i]
        text = by_id[partner[i]][2]
        # a letter "B" moved to another question picks that question's option B; "Rock" its option named Rock
        assert v == float("ABCD"[match_muchomusic(text, list(opts))] == key)
    assert moved.condition == QUESTION_PERMUTATION and set(moved.groups) == set(tracks)
    assert run.question_permutation("parse_rate") is None


def test_free_form_scores_the_moved_answer_against_this_items_reference():
    items, responses = [], []
    for c in range(15):
        for topic in ("genre", "tempo", "mood"):
            iid = f"t{c}-{topic}"
            items.append(Item(iid, f"What is the {topic}?", reference=f"the {topic} is {topic}{c}", group=f"t{c}"))
            responses.append(Response(iid, "correct", "m", f"What is the {topic}?", f"the {topic} is {topic}{c}"))
    run = FreeformProtocol.from_answers(AnswerSet(items, responses, [], model="m", source="qa"),
                                        ProtocolSettings(seed=1, options={"metrics": ["rouge_l"]}))
    correct, moved = run.scores("rouge_l"), run.question_permutation("rouge_l")
    assert correct.mean() == pytest.approx(1.0) and moved.mean() < 0.7  # another question's answer, this reference
    assert sorted(moved.ids) == sorted(correct.ids) and moved.condition == QUESTION_PERMUTATION
    assert "question permutation" not in run.conditions  # a control of the gate, not a condition of the answers
    result = checks.answers_the_question(Gate(), run)
    assert result.outcome is Outcome.PASS and result.check == "freeform/answers_the_question/m/qa/rouge_l"
    assert "answers the question: rouge_l Correct beats the same answers moved to other questions about the same clip" \
        in result.name


def test_answers_that_fit_every_question_about_their_clip_do_not_pass():
    """Answers moved one question along within each track: the model heard the track but answered
    another question. Correct no longer beats its own moved answers."""
    options = ("Jazz", "Rock", "Pop", "Folk")
    tracks = {}
    for c in range(30):
        keys = ["ABCD"[(c + k) % 4] for k in range(4)]
        listened = [f"({key})" for key in keys]
        shifted = listened[-1:] + listened[:-1]
        tracks[f"t{c}"] = [(f"t{c}-{k}", keys[k], options, shifted[k]) for k in range(4)]
    result = checks.answers_the_question(Gate(), _choice(tracks))
    assert result.outcome in (Outcome.FAIL, Outcome.INCONCLUSIVE)


def test_not_applicable_when_no_clip_has_several_questions():
    options = ("Jazz", "Rock", "Pop", "Folk")
    run = _choice({f"t{c}": [(f"q{c}", "A", options, "(A)")] for c in range(40)})
    assert run.question_permutation("accuracy") is None
    assert checks.answers_the_question(Gate(), run) is None
    reason = _question_control_absent(run)
    assert reason.startswith("no clip has several different questions (40 items, none with another question about its clip)")
    few = _choice({"t0": [("a", "A", options, "(A)"), ("b", "B", options, "(B)")],
                   "t1": [("c", "A", options, "(A)"), ("d", "B", options, "(B)")]})
    assert few.question_permutation("accuracy") is None
    assert _question_control_absent(few).startswith("only 4 items on 2 clips paired; the question control needs at least")


def test_a_protocol_without_a_scorer_for_moved_answers_is_not_applicable():
    from musiceval.protocols.base import Protocol

    assert Protocol.question_permutation(object(), "f1") is None  # the default of every protocol


def test_mmau_questions_about_one_clip_are_one_group_and_move_between_each_other(tmp_path):
    import json

    from musiceval.data.mmau import load_mmau

    rows = [{"id": f"q{c}{k}", "audio_id": f"./test-mini-audios/clip{c}.wav", "question": f"Question {k} about clip {c}?",
             "choices": ["Piano", "Violin", "Flute", "Trumpet"], "answer": "Violin", "task": "music",
             "model_prediction": "(B) Violin"} for c in range(4) for k in range(3)]
    path = tmp_path / "mmau.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    answers = load_mmau(path)
    assert {it.group for it in answers.items} == {f"./test-mini-audios/clip{c}.wav" for c in range(4)}
    run = ChoiceProtocol.from_answers(answers)
    partners = run.question_partners()
    assert len(partners.partner) == 12 and partners.clips == 4
    assert all(i[:2] == j[:2] for i, j in partners.partner.items())  # q<clip><k>: the same clip
    assert run.question_permutation("accuracy").mean() == 1.0  # "(B) Violin" is right for every question here
