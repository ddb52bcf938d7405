"""The LLM judge (docs/judge.md) on real MusicQA answers (MiDashengLM's, ../shared/data/musicqa), judged
by scripted judges behind the fake OpenAI-compatible server, through the real openai client and
vcrpy cassettes, and by a tiny local transformers model through the ``hf:`` adapter."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from musiceval.data.formats import load_answers
from musiceval.llm.fake_server import FakeOpenAIServer
from musiceval.protocols import PROTOCOLS, ProtocolSettings
from musiceval.protocols.judge.engine import (PROMPTS, Judge, JudgeCassetteMiss, JudgeError, JudgeSettings,
                                              JudgeUnpinned, mmau_pro_prompt, parse_mmau_pro, parse_pairwise,
                                              parse_pointwise, parse_rubric)
from tests.judge_server import fair, first_seat, mumbling, option_reader, yes_man

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
MUSICQA = SHARED / "musicqa" / "dev_midashenglm.jsonl"
SNAPSHOT = "judge-2024-08-06"


@pytest.fixture
def answers_file(tmp_path):
    if not MUSICQA.is_file():
        pytest.skip(f"{MUSICQA} absent (../shared/data is optional)")
    path = tmp_path / "musicqa.jsonl"
    path.write_text("".join(MUSICQA.read_text("utf-8").splitlines(keepends=True)[:90]), "utf-8")
    return path


def _protocol(path, server, tmp_path, *, record="once", cache="cache", **judge):
    options = {"model": f"openai-compatible:{server.base_url}#{judge.pop('model', SNAPSHOT)}", **judge}
    settings = ProtocolSettings(seed=0, options={**options, "cache_dir": str(tmp_path / cache)}, config_dir=str(tmp_path),
                                record_mode=record)
    return PROTOCOLS.get("judge").from_answers(load_answers(path, protocol="judge"), settings)


def test_replies_are_read_only_in_the_templates_form():
    assert parse_pointwise("VERDICT: CORRECT") == 1.0 and parse_pointwise("verdict:incorrect.") == 0.0
    assert parse_pointwise("Correct") == 1.0 and parse_pointwise("  INCORRECT\n") == 0.0
    for unreadable in (None, "", "I think so", "VERDICT: CORRECT\nVERDICT: INCORRECT", "VERDICT: maybe",
                       "The answer is mostly correct", "\x00" * 10, "VERDICT: CORRECTNESS"):
        assert parse_pointwise(unreadable) is None, unreadable
    assert parse_pairwise("PREFERENCE: 2") == "2" and parse_pairwise("preference: tie") == "tie"
    for unreadable in (None, "", "PREFERENCE: 3", "PREFERENCE: 1 PREFERENCE: 2", "Answer 1 is better"):
        assert parse_pairwise(unreadable) is None, unreadable


@pytest.mark.parametrize("model, pinned", [
    ("gpt-4o-2024-08-06", True), ("claude-3-5-sonnet-20241022", True), ("Qwen/Qwen2.5-7B-Instruct@0123abcd", True),
    ("gpt-4o", False), ("gpt-4o-mini", False), ("gpt-4-0613", False), ("Qwen/Qwen2.5-7B-Instruct", False),
    ("model-20241399", False)])
def test_an_endpoint_judge_is_pinned_by_a_dated_snapshot_or_a_revision(model, pinned):
    settings = JudgeSettings(f"openai-compatible:http://127.0.0.1:1/v1#{model}")
    assert (settings.unpinned() is None) == pinned
    if not pinned:
        with pytest.raises(JudgeUnpinned, match="allow_unpinned"):
            Judge(settings, cassettes="unused")
        assert Judge(JudgeSettings(settings.spec, allow_unpinned=True), cassettes="unused").unpinned_reason


def test_settings_that_cannot_judge_are_refused_naming_the_fix():
    with pytest.raises(JudgeError, match=r"\[judge\] model"):
        JudgeSettings("")
    with pytest.raises(JudgeError, match="temperature"):
        JudgeSettings("openai:x-2024-01-01", samples=3)
    with pytest.raises(JudgeError, match="pointwise or pairwise"):
        JudgeSettings("openai:x-2024-01-01", mode="listwise")
    with pytest.raises(JudgeError, match="cassettes"):
        Judge(JudgeSettings("openai:x-2024-01-01"))  # an endpoint judge is always recorded


def test_a_judged_set_is_recorded_then_replayed_offline_identically(answers_file, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    with FakeOpenAIServer(reply=fair) as server:
        live = _protocol(answers_file, server, tmp_path)
        recorded = {m: live.scores(m).values for m in live.metrics}
        moved = live.answer_permutation("judge_score")
        calls = len(server.requests)
    assert calls > 0 and live.judge.n_calls == calls
    cassettes = sorted((tmp_path / "cassettes" / "judge" / "musicqa").glob("*.yaml"))
    assert cassettes and not any("test-key-not-secret" in p.read_text("utf-8") for p in cassettes)
    monkeypatch.delenv("OPENAI_API_KEY")
    with FakeOpenAIServer(reply=yes_man) as server:  # another judge at another address: never asked
        replay = _protocol(answers_file, server, tmp_path, record="none", cache="cache2")
        for metric in replay.metrics:
            np.testing.assert_array_equal(replay.scores(metric).values, recorded[metric])
        np.testing.assert_array_equal(replay.answer_permutation("judge_score").values, moved.values)
        assert server.requests == []
    # the same run from the cache alone: no cassette read, no call
    cached = _protocol(answers_file, server, tmp_path, record="none")
    np.testing.assert_array_equal(cached.scores("judge_score").values, recorded["judge_score"])
    assert cached.judge.n_calls == 0


def test_a_call_the_cassettes_lack_is_an_error_naming_the_item(answers_file, tmp_path):
    with pytest.raises(JudgeCassetteMiss, match=r"item '.+'.*--musiceval-record-mode once"):
        with FakeOpenAIServer(reply=fair) as server:
            _protocol(answers_file, server, tmp_path, record="none").scores("judge_score")


def test_an_unreadable_reply_is_a_counted_failure_with_the_reply_kept(answers_file, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    with FakeOpenAIServer(reply=mumbling(5)) as server:
        run = _protocol(answers_file, server, tmp_path)
        scores, parse = run.scores("judge_score"), run.scores("parse_rate")
        samples = [s for s in run.samples() if s["condition"] == "correct"]
    assert len(scores.failures) > 0 and scores.n + len(scores.failures) == parse.n
    assert all(f.reason.startswith("correct: judge reply unreadable: 'I would rather not say.'") for f in scores.failures)
    assert parse.mean() == pytest.approx(scores.n / parse.n)  # one reply per item: an unread item reads 0 here
    failed = [s for s in samples if s.get("failure")]
    assert len(failed) == len(scores.failures) and all(s["judge_replies"] == ["I would rather not say."] for s in failed)
    assert all(s["parsed"] is None for s in failed)  # never scored 0
    assert run.evaluate()["n_failed"] >= len(scores.failures)


def test_pairwise_judging_puts_the_answer_in_both_seats_and_a_seat_bias_shows(answers_file, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    with FakeOpenAIServer(reply=first_seat) as server:
        run = _protocol(answers_file, server, tmp_path, mode="pairwise")
        scores = run.scores("judge_score")
        same = run.audit()["same_verdict_both_seats"]
        prompts = [b["prompt"] for b in server.bodies]
    assert len(set(prompts)) == len(prompts) and any("Answer 1:" in p for p in prompts)  # each seat asked once
    assert same.mean() == 0.0 and np.all(scores.values == 0.5)  # every item flipped: a tie, never a win
    with FakeOpenAIServer(reply=fair) as server:
        fair_run = _protocol(answers_file, server, tmp_path, mode="pairwise", model="fair-2024-09-01", cache="cache-fair")
        assert fair_run.audit()["same_verdict_both_seats"].mean() == 1.0


def test_a_judge_that_ignores_the_answer_scores_moved_references_alike(answers_file, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    with FakeOpenAIServer(reply=yes_man) as server:
        audit = _protocol(answers_file, server, tmp_path).audit()
    assert audit["reference_in_place"].mean() == audit["reference_moved"].mean() == 1.0
    with FakeOpenAIServer(reply=fair) as server:
        audit = _protocol(answers_file, server, tmp_path, model="fair-2024-09-01", cache="cache-fair").audit()
    assert audit["reference_in_place"].mean() > audit["reference_moved"].mean() + 0.5


def test_self_consistency_counts_samples_agreeing_with_their_majority(answers_file, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")

    def coin(body):  # a judge whose verdict is its seed's parity: samples 0, 1, 2 say C, I, C
        return "VERDICT: CORRECT" if body["seed"] % 2 == 0 else "VERDICT: INCORRECT"

    with FakeOpenAIServer(reply=coin) as server:
        run = _protocol(answers_file, server, tmp_path, samples=3, temperature=0.7)
        agree = run.audit()["self_consistency"]
        assert {b["temperature"] for b in server.bodies} == {0.7}
        assert sorted({b["seed"] for b in server.bodies}) == [0, 1, 2]
    assert np.allclose(agree.values, 2 / 3) and np.allclose(run.scores("judge_score").values, 2 / 3)


def test_a_local_transformers_judge_answers_through_the_hf_adapter(answers_file, tmp_path):
    pytest.importorskip("transformers")
    from musiceval.models.tiny import build_tiny_qwen2_audio

    model_dir = build_tiny_qwen2_audio(tmp_path / "tiny-judge")
    settings = ProtocolSettings(seed=0, options={"model": f"hf:{model_dir}", "max_tokens": 8,
                                                 "cache_dir": str(tmp_path / "cache")})
    answers = load_answers(answers_file, protocol="judge")
    run = PROTOCOLS.get("judge").from_answers(answers, settings)
    assert run.judge.unpinned_reason is None and len(run.judge.revision) == 16  # the weights' content hash
    parse = run.scores("parse_rate")
    scores = run.scores("judge_score")
    # random weights say nothing readable: every item a counted failure, none scored
    assert parse.n == len({r.item_id for r in answers.responses}) and scores.n + len(scores.failures) == parse.n
    again = PROTOCOLS.get("judge").from_answers(answers, settings)
    assert [j.replies for j in again.judged("correct").values()] == [j.replies for j in run.judged("correct").values()]
    assert again.judge.n_calls == 0  # every reply from the cache
    json.dumps(list(run.samples()))  # the drill-down rows are plain data
    # the weights' revision is on the scorer side of the provenance: other weights at one path do not compare
    from musiceval.protocols.judge.protocol import JudgeProtocol
    from musiceval.provenance import check_comparable, fingerprint

    before = JudgeProtocol.scorer({"model": f"hf:{model_dir}", "max_tokens": 8})
    assert before["revision"] == run.judge.revision
    config = json.loads((model_dir / "config.json").read_text("utf-8"))
    (model_dir / "config.json").write_text(json.dumps({**config, "musiceval_test_edit": 1}), "utf-8")
    after = JudgeProtocol.scorer({"model": f"hf:{model_dir}", "max_tokens": 8})
    assert len(after["revision"]) == 16 and after["revision"] != before["revision"]
    differences = check_comparable(fingerprint(protocols={"judge": {"scorer": before}}, seed=0),
                                   fingerprint(protocols={"judge": {"scorer": after}}, seed=0))
    assert any("revision" in d for d in differences), differences


def test_on_multiple_choice_items_the_judge_is_checked_against_the_option_matcher(tmp_path, monkeypatch):
    """MiDashengLM's MuChoMusic answers (letters): the judge reads the question with its options and
    the correct option as the reference; where the answer is known its verdicts are compared with
    MuChoMusic's option matcher, item by item, and by Cohen's kappa."""
    source = SHARED / "muchomusic" / "dev_midashenglm.jsonl"
    if not source.is_file():
        pytest.skip(f"{source} absent (../shared/data is optional)")
    path = tmp_path / "muchomusic.jsonl"
    path.write_text("".join(source.read_text("utf-8").splitlines(keepends=True)[:80]), "utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    with FakeOpenAIServer(reply=option_reader) as server:
        run = _protocol(path, server, tmp_path)
        audit = run.audit()
        prompt = server.bodies[0]["prompt"]
    assert "Options: (A) " in prompt and "Reference answer: (" in prompt
    assert audit["agrees_with_exact"].n == 80 and audit["agrees_with_exact"].mean() == 1.0
    assert audit["kappa_with_exact"] == 1.0
    with FakeOpenAIServer(reply=yes_man) as server:
        audit = _protocol(path, server, tmp_path, model="yes-2024-08-06", cache="cache-yes").audit()
    accuracy = run.scores("judge_score").mean()  # the matcher's accuracy, which the reader reproduced
    assert audit["agrees_with_exact"].mean() == pytest.approx(accuracy) and audit["kappa_with_exact"] == 0.0


# ---------------------------------------------------------------- rubric: AIR-Bench's 1-10 rule

#: replies a rubric parser must refuse: missing scores, out of range, three numbers, prose
HOSTILE = ("", "7", "0 5", "11 3", "7 4 2", "Assistant 1: 7, Assistant 2: 4", "I would rate them 7 and 4.", "7/10 4/10",
           "seven four", "7 4\nbecause the first is better", "-1 5", "7.5 4")


def test_rubric_replies_are_read_only_as_two_scores_from_1_to_10():
    assert parse_rubric("7 4") == (7, 4) and parse_rubric(" 10 1\n") == (10, 1) and parse_rubric("1 10") == (1, 10)
    for unreadable in (None, *HOSTILE):
        assert parse_rubric(unreadable) is None, unreadable


def test_rubric_settings_record_their_template_hash():
    facts = JudgeSettings("openai:x-2024-01-01", mode="rubric").facts()
    assert facts["template"] == "rubric_v1" and facts["mode"] == "rubric"
    assert facts["template_sha256"] == hashlib.sha256((PROMPTS / "rubric_v1.txt").read_bytes()).hexdigest()


def test_a_hostile_rubric_reply_is_a_counted_failure_with_the_reply_kept(answers_file, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    seen: dict[str, int] = {}

    def hostile(body):
        prompt = body["messages"][-1]["content"]
        return HOSTILE[seen.setdefault(prompt, len(seen)) % len(HOSTILE)]

    with FakeOpenAIServer(reply=hostile) as server:
        run = _protocol(answers_file, server, tmp_path, mode="rubric")
        scores, parse = run.scores("judge_score"), run.scores("parse_rate")
        samples = [s for s in run.samples() if s["condition"] == "correct"]
    assert scores.n == 0 and len(scores.failures) == parse.n > 0  # no item read, none scored 0
    assert np.all(parse.values == 0.0)
    assert all(f.reason.startswith("correct: judge reply unreadable: ") for f in scores.failures)
    for s in samples:
        assert s["parsed"] is None and s["failure"] and len(s["judge_replies"]) == 2  # both seats, both kept
        assert set(s["judge_replies"]) <= set(HOSTILE)


def test_rubric_asks_both_seats_and_scores_the_answer_by_their_mean(answers_file, tmp_path, monkeypatch):
    """A judge that gives the first assistant 9 and the second 3 whatever they say: the answer
    scores 3 behind the reference and 9 in front of it, 6 on average, the reference 6 too, and
    every item's ordering follows the seat, which the seat audit reports."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    with FakeOpenAIServer(reply=first_seat) as server:
        run = _protocol(answers_file, server, tmp_path, mode="rubric")
        scores = run.scores("judge_score")
        same = run.audit()["same_verdict_both_seats"]
        prompts = [b["prompt"] for b in server.bodies]
        rows = {s["item_id"]: s for s in run.samples() if s["condition"] == "correct"}
    assert scores.n > 0 and np.all(scores.values == 6.0)
    assert {r["reference_score"] for r in rows.values()} == {6.0}
    assert same.n == scores.n and same.mean() == 0.0  # every item flipped with the seats
    assert len(set(prompts)) == len(prompts)
    item_id, row = next(iter(rows.items()))
    mine = [p for p in prompts if f"\n{row['answer']}\n" in p and f"\n{row['reference']}\n" in p]
    assert len(mine) >= 2  # the reference as assistant 1, then the answer as assistant 1
    assert any(p.index(row["reference"]) < p.index(row["answer"]) for p in mine)
    assert any(p.index(row["answer"]) < p.index(row["reference"]) for p in mine)
    assert run.metric_info("judge_score").unit.startswith("the answer's 1-10 score")


def test_a_fair_rubric_judge_keeps_its_ordering_and_scores_moved_answers_lower(answers_file, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    with FakeOpenAIServer(reply=fair) as server:
        run = _protocol(answers_file, server, tmp_path, mode="rubric")
        scores, moved = run.scores("judge_score"), run.answer_permutation("judge_score")
        audit = run.audit()
    assert 1.0 <= scores.values.min() and scores.values.max() <= 10.0
    assert moved.mean() < scores.mean() - 0.5  # another clip's answer shares fewer words with the reference
    assert audit["same_verdict_both_seats"].mean() == 1.0
    assert audit["reference_in_place"].mean() > audit["reference_moved"].mean()
    assert run.chances("judge_score")[0].value == pytest.approx(moved.mean())


def test_rubric_scores_replay_from_the_cassettes_identically_with_the_server_off(answers_file, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    with FakeOpenAIServer(reply=fair) as server:
        live = _protocol(answers_file, server, tmp_path, mode="rubric")
        recorded = {m: live.scores(m).values for m in live.metrics}
        flips = live.audit()["same_verdict_both_seats"].values
        asked = len(server.requests)
    assert asked == live.judge.n_calls > 0
    monkeypatch.delenv("OPENAI_API_KEY")
    with FakeOpenAIServer(reply=yes_man) as server:  # never asked
        replay = _protocol(answers_file, server, tmp_path, mode="rubric", record="none", cache="cache2")
        for metric in replay.metrics:
            np.testing.assert_array_equal(replay.scores(metric).values, recorded[metric])
        np.testing.assert_array_equal(replay.audit()["same_verdict_both_seats"].values, flips)
        assert server.requests == []


# ---------------------------------------------------------------- mmau-pro: MMAU-Pro's open-ended rule

#: ``create_evaluation_prompt`` of ``evaluate_mmau_pro_comprehensive.py`` (github.com/sonalkum/MMAUPro, commit
#: 226976255135302de77c6860ed3b9a66c4998c5e) as its ``main`` calls it: every open-ended item with task type
#: "open", whose context is "general open-ended question answering"
EVALUATOR_PROMPT = (
    "You are an expert evaluator for general open-ended question answering tasks. Please evaluate the quality of "
    "a model's response to a question.\n\nQuestion: {question}\n\nReference Answer: {reference_answer}\n\n"
    "Model Response: {model_response}\n\nPlease evaluate the model response on the following criteria and provide "
    "scores from 1-5 (where 5 is best):\n\n"
    "1. **Correctness**: How factually accurate is the response compared to the reference?\n"
    "2. **Relevance**: How well does the response address the specific question asked?\n"
    "3. **Completeness**: Does the response cover all important aspects mentioned in the reference?\n"
    "4. **Clarity**: How clear and well-structured is the response?\n\n"
    "For each criterion, provide:\n- A score from 1-5\n- A brief justification (1-2 sentences)\n\n"
    "Format your response as:\n\n"
    "CORRECTNESS: [score] - [justification]\nRELEVANCE: [score] - [justification] \n"
    "COMPLETENESS: [score] - [justification]\nCLARITY: [score] - [justification]\n"
    "OVERALL: [average score] - [overall assessment]")


def test_the_mmau_pro_template_is_its_evaluators_prompt_and_recorded_by_hash():
    q, ref, answer = "What instrument {plays}?", "A violin, bowed.", "I hear a violin."
    assert mmau_pro_prompt(q, ref, answer) == EVALUATOR_PROMPT.format(question=q, reference_answer=ref,
                                                                      model_response=answer)
    facts = JudgeSettings("openai:x-2024-01-01", mode="mmau-pro", max_tokens=512).facts()
    assert facts["template"] == "mmau_pro_v1" and facts["mode"] == "mmau-pro"
    assert facts["template_sha256"] == hashlib.sha256((PROMPTS / "mmau_pro_v1.txt").read_bytes()).hexdigest()


def _reply(c, r, m, k, overall=None):
    lines = [f"CORRECTNESS: {c} - a reason.", f"RELEVANCE: {r} - a reason.", f"COMPLETENESS: {m} - a reason.",
             f"CLARITY: {k} - a reason."]
    return "\n".join(lines + ([f"OVERALL: {overall} - in all."] if overall is not None else []))


def test_mmau_pro_replies_are_read_as_its_evaluator_reads_them():
    assert parse_mmau_pro(_reply(4, 5, 4, 4, "4.25")) == 4.25
    assert parse_mmau_pro(_reply(5, 5, 4, 2, 5)) == 5.0  # OVERALL as written, not recomputed
    assert parse_mmau_pro(_reply(4, 4, 3, 2, 3)) == 3.25  # OVERALL exactly 3: the criteria's mean
    assert parse_mmau_pro(_reply(5, 4, 4, 3)) == 4.0  # no OVERALL: the criteria's mean
    assert parse_mmau_pro("correctness: 2\nrelevance: 2\ncompleteness: 1\nclarity: 3\noverall: 2") == 2.0
    assert parse_mmau_pro("OVERALL: 4 - only the verdict line") == 4.0


#: replies the evaluator would fill in with its neutral 3 (unreadable here), or whose numbers are off the scale
MMAU_PRO_UNREADABLE = ("", "The answer is good.", "OVERALL: 3 - fine", "CORRECTNESS: 4\nRELEVANCE: 4",
                       "OVERALL: [average score] - [overall assessment]", _reply(4, 4, 4, 4, 7), _reply(0, 4, 4, 4, 4),
                       "OVERALL: 3\nCORRECTNESS: 3\nCLARITY: 3", "Overall I would give it four out of five.")


def test_an_mmau_pro_reply_without_its_numbers_is_unreadable_never_a_neutral_3():
    for unreadable in (None, *MMAU_PRO_UNREADABLE):
        assert parse_mmau_pro(unreadable) is None, unreadable


def test_the_mmau_pro_mode_leaves_its_judge_room_for_its_five_lines():
    with pytest.raises(JudgeError, match=r"max_tokens = 512"):
        JudgeSettings("openai:x-2024-01-01", mode="mmau-pro")
    assert JudgeSettings("openai:x-2024-01-01", mode="mmau-pro", max_tokens=512).max_tokens == 512


def test_mmau_pro_scores_each_answer_1_to_5_and_counts_unreadable_replies(answers_file, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    with FakeOpenAIServer(reply=fair) as server:
        run = _protocol(answers_file, server, tmp_path, mode="mmau-pro", max_tokens=512)
        scores, moved = run.scores("judge_score"), run.answer_permutation("judge_score")
        prompts = [b["prompt"] for b in server.bodies]
    assert scores.n > 0 and 1.0 <= scores.values.min() and scores.values.max() <= 5.0
    assert moved.mean() < scores.mean()  # another clip's answer shares fewer words with the reference
    assert all(p.startswith("You are an expert evaluator for general open-ended") for p in prompts)
    assert run.metric_info("judge_score").unit.startswith("the answer's 1-5 score")
    assert run.audit()["same_verdict_both_seats"] is None  # one seat, as the evaluator asks
    (tmp_path / "mumbled").mkdir()
    with FakeOpenAIServer(reply=mumbling(3)) as server:  # its own cassettes
        mumbled = _protocol(answers_file, server, tmp_path / "mumbled", mode="mmau-pro", max_tokens=512)
        scores, parse = mumbled.scores("judge_score"), mumbled.scores("parse_rate")
    assert scores.failures and len(scores.failures) + scores.n == parse.n
    assert all(f.reason.startswith("correct: judge reply unreadable: ") for f in scores.failures)
    assert scores.values.min() >= 1.0  # an unreadable reply is a failure, never a 0 or a neutral 3


def test_mmau_pro_scores_replay_from_the_cassettes_identically_with_the_server_off(answers_file, tmp_path,
                                                                                    monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    with FakeOpenAIServer(reply=fair) as server:
        live = _protocol(answers_file, server, tmp_path, mode="mmau-pro", max_tokens=512)
        recorded = {m: live.scores(m).values for m in live.metrics}
    monkeypatch.delenv("OPENAI_API_KEY")
    with FakeOpenAIServer(reply=yes_man) as server:  # never asked
        replay = _protocol(answers_file, server, tmp_path, mode="mmau-pro", max_tokens=512, record="none",
                           cache="cache2")
        for metric in replay.metrics:
            np.testing.assert_array_equal(replay.scores(metric).values, recorded[metric])
        assert server.requests == []
