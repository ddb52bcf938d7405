"""The five protocols: conditions, metrics, paired scores, chances, parse_rate, derived Random,
evaluate/samples shapes, and numbers equal to today's scoring functions on the fixtures."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from musiceval.data.answers import AnswerSet
from musiceval.data.formats import load_answers
from musiceval.protocols import PARSE_RATE, PROTOCOLS, ProtocolSettings
from musiceval.records import Item, Response

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CHOICE = FIXTURES / "choice" / "dev_midashenglm.jsonl"
NSYNTH = FIXTURES / "factual" / "nsynth_midashenglm.jsonl"
MUSICQA = FIXTURES / "freeform" / "musicqa_dev_midashenglm.jsonl"
MIR = FIXTURES / "mir" / "outputs"


def build(name, path, **options):
    return PROTOCOLS.get(name).from_answers(load_answers(path, protocol=name), ProtocolSettings(seed=0, options=options))


def test_registry_holds_the_five_protocols():
    assert set(PROTOCOLS.names()) >= {"choice", "factual", "freeform", "mir", "triplets"}


def test_load_protocol_detects_the_format_and_refuses_the_wrong_protocol():
    from musiceval.data.formats import FormatError
    from musiceval.protocols import load_protocol

    p = load_protocol("factual", NSYNTH, settings=ProtocolSettings(options={"vocab": "nsynth", "n_permutations": 50}))
    assert p.name == "factual" and p.source == str(NSYNTH) and p.model == "MiDashengLM"
    p.model = "my-model"  # the caller (suite config) may rename it
    assert p.model == "my-model"
    with pytest.raises(FormatError, match="not 'choice'"):
        load_protocol("choice", NSYNTH)
    with pytest.raises(TypeError, match="from_encoder"):
        PROTOCOLS.get("triplets").from_answers(load_answers(NSYNTH), ProtocolSettings())


def check_shapes(protocol):
    """evaluate() in mir_eval's shape, samples() fields, scores() paired by id with groups."""
    out = protocol.evaluate()
    keys = list(out)
    assert keys[0] == protocol.headline and keys[-3:] == ["n", "n_failed", "failures"]
    for metric in protocol.metrics:
        s = protocol.scores(metric)
        assert s.metric == metric and s.condition == "correct" and s.groups is not None and len(s.groups) == s.n
    sample = next(iter(protocol.samples()))
    assert set(sample) == {"item_id", "condition", "prompt", "answer", "parsed", "reference", "scores"}
    with pytest.raises(KeyError, match="unknown metric"):
        protocol.scores("no-such-metric")
    return out


# ------------------------------------------------------------------------------------ choice


def test_choice_equals_the_engine_on_the_loaders_records_and_counts_unanswered_as_unparsed():
    from musiceval.data.muchomusic import load_dasheng_jsonl
    from musiceval.protocols.choice.engine import choice_records, score_records

    p = build("choice", CHOICE)
    loaded = choice_records(load_dasheng_jsonl(str(CHOICE)))
    today = score_records(loaded.records, "muchomusic", loaded.failures)
    assert p.conditions == ("correct",) and p.metrics == ("accuracy", PARSE_RATE) and p.model == "MiDashengLM"
    acc, ifr = p.scores("accuracy"), p.scores(PARSE_RATE)
    assert acc.mean() == today.metrics()["accuracy"] and ifr.mean() == today.metrics()["ifr"]
    assert acc.ids == ifr.ids == today.item_scores().ids
    unanswered = int(round((1 - ifr.mean()) * ifr.n))
    assert unanswered >= 1 and [f.reason.startswith("unparsed:") for f in acc.failures].count(True) == unanswered
    chance, constant, permuted = p.chances("accuracy")
    assert chance.kind == "fixed" and chance.value == 0.25 and chance.name == "uniform chance 1/4"
    # the best constant answer: the most frequent correct letter of the first 200 MuChoMusic keys
    keys = [json.loads(line)["answer"] for line in CHOICE.read_text(encoding="utf-8").splitlines() if line.strip()]
    top = max("ABCD", key=keys.count)
    assert constant.kind == "baseline" and constant.value == keys.count(top) / len(keys) and f"({top})" in constant.description
    assert permuted.kind == "baseline" and permuted.name == "answer permutation" and 0.15 < permuted.value < 0.35
    assert constant.scores.ids == permuted.scores.ids == tuple(sorted(acc.ids))
    assert p.chances(PARSE_RATE) == ()
    out = check_shapes(p)
    assert out["accuracy"] == today.metrics()["accuracy"] and out["n"] == 200 and out["n_failed"] == unanswered
    rows = list(p.samples())
    assert len(rows) == 200 and sum(r["scores"]["accuracy"] for r in rows) == acc.values.sum()
    assert sum(r["parsed"] is None for r in rows) == unanswered


def test_choice_uses_recorded_controls_and_derives_no_random(tmp_path):
    rows = []
    for i in range(6):
        base = {"item_id": f"q{i}", "question": f"Q{i}?", "choices": ["a", "b", "c", "d"], "answer": "B", "model": "m"}
        rows.append({**base, "text": "B"})
        rows.append({**base, "text": "A" if i % 2 else "nothing", "condition": "text_only"})
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    p = build("choice", path)
    assert p.conditions == ("correct", "text_only") and p.controls() == ("text_only",)
    assert p.scores("accuracy").mean() == 1.0 and p.scores("accuracy", "text_only").mean() == 0.0
    assert p.scores(PARSE_RATE, "text_only").mean() == 0.5
    assert p.scores("accuracy", "text_only").ids == p.scores("accuracy").ids
    with pytest.raises(KeyError, match="no responses under condition 'random'"):
        p.scores("accuracy", "random")


# ----------------------------------------------------------------------------------- factual


def test_factual_equals_todays_scoring_with_derived_random_and_permutation_chance():
    from musiceval.extraction import load_vocabulary
    from musiceval.protocols.factual.engine import score_factual
    from musiceval.protocols.factual.engine import factual_set, load_factual

    p = build("factual", NSYNTH, vocab="nsynth")
    today = score_factual(factual_set(load_factual(NSYNTH, "dasheng")), load_vocabulary("nsynth"), seed=0, n_permutations=2000)
    assert p.conditions == ("correct", "random") and p.headline == "f1" and p.model == "MiDashengLM"
    for condition in ("correct", "random"):
        for metric in ("precision", "recall", "f1", "accuracy"):
            s, t = p.scores(metric, condition), today.scores[condition][metric]
            assert s.ids == t.ids and np.array_equal(s.values, t.values)
    assert p.scores("f1").mean() > p.scores("f1", "random").mean()
    chance, constant = p.chances("f1")
    assert chance.kind == "permutation" and len(chance.null) == 2000 and np.array_equal(chance.null, today.null_f1)
    assert constant.kind == "baseline" and constant.name == "best constant label set"
    assert 0 < constant.value < p.scores("f1").mean() and p.derived == ("random",)
    assert p.chances("precision") == ()
    pr = p.scores(PARSE_RATE)
    assert pr.ids == p.scores("f1").ids and set(pr.values) <= {0.0, 1.0}
    unparsed = [f for f in p.scores("f1").failures if f.reason.startswith("unparsed:")]
    assert len(unparsed) == int((pr.values == 0).sum())
    check_shapes(p)
    random_rows = [r for r in p.samples() if r["condition"] == "random"]
    assert len(random_rows) == p.scores("f1", "random").n and all(r["answer"] is not None for r in random_rows)


def test_factual_cmi_bench_vocabulary_comes_from_the_task():
    p = build("factual", FIXTURES / "factual" / "ltu_GTZAN.jsonl")
    assert p.vocab.name == "gtzan" and p.model == "ltu"
    assert 0 <= p.scores("f1").mean() <= 1 and p.scores(PARSE_RATE).mean() < 1  # LTU often names no genre


def test_factual_scores_recorded_controls_as_given():
    items = [Item(id=f"i{k}", question="What instrument?", labels=(lab,), group=f"g{k}")
             for k, lab in enumerate(["bass", "guitar", "flute", "bass"])]
    responses = [Response(f"i{k}", "correct", "m", "What instrument?", it.labels[0]) for k, it in enumerate(items)]
    responses += [Response(f"i{k}", "noise", "m", "What instrument?", "bass") for k in range(4)]
    p = PROTOCOLS.get("factual").from_answers(AnswerSet(items, responses, []), ProtocolSettings(options={"vocab": "nsynth"}))
    assert p.conditions == ("correct", "random", "noise")
    assert p.scores("f1").mean() == 1.0 and p.scores("f1", "noise").mean() == 0.5
    with pytest.raises(ValueError, match="set the factual option 'vocab'"):
        PROTOCOLS.get("factual").from_answers(AnswerSet(items, responses, []), ProtocolSettings())


# ---------------------------------------------------------------------------------- freeform


def test_freeform_equals_todays_evaluation_on_lexical_metrics():
    from musiceval.conditions import load_rewrites
    from musiceval.data.musicqa import load_dasheng_musicqa
    from musiceval.protocols.freeform.engine import FreeformEvaluation

    rewrites = FIXTURES / "freeform" / "rewrites_handwritten.jsonl"
    p = build("freeform", MUSICQA, metrics=["bleu", "rouge_l", "cider"], rewrites=str(rewrites))
    today = FreeformEvaluation(load_dasheng_musicqa(MUSICQA), seed=0, rewrites=load_rewrites(rewrites))
    assert p.conditions == ("correct", "random", "skyline", "adversarial")
    assert p.metrics == ("bleu", "rouge_l", "cider", PARSE_RATE) and p.headline == "bleu"
    for condition in p.conditions:
        for metric in ("bleu", "rouge_l", "cider"):
            s, t = p.scores(metric, condition), today.scores(metric, condition)
            assert s.ids == t.ids and np.array_equal(s.values, t.values)
    assert p.metric_info("bleu").role == "finding" and p.metric_info("sentence_cosine").role == "gate"
    assert p.scores(PARSE_RATE).mean() == 1.0 and p.scores(PARSE_RATE).n == 396
    assert p.failures == []  # the 4 references that are only a copy of the question are left out by rule:
    assert p.evaluate()["excluded"]["reference_copies_question"]["n"] == 4


def test_freeform_headline_is_the_first_gating_metric_asked_for():
    """A finding (BLEU) never leads: the headline is what "the model listens" gates."""
    assert build("freeform", MUSICQA, metrics=["bleu", "bertscore", "rouge_l"]).headline == "bertscore"
    assert build("freeform", MUSICQA, metrics=["bleu", "rouge_l"]).headline == "bleu"  # refused where gates run


def test_only_findings_asked_for_are_refused_where_the_gates_run():
    from musiceval.protocols.base import ProtocolError, check_headline

    with pytest.raises(ProtocolError, match="headline 'bleu' has role='finding'"):
        check_headline(build("freeform", MUSICQA, metrics=["bleu", "rouge_l"]))
    check_headline(build("freeform", MUSICQA, metrics=["bleu", "bertscore"]))


def test_freeform_keep_compared_only_keeps_items_with_a_partner_or_a_rewrite():
    rewrites = FIXTURES / "freeform" / "rewrites_handwritten.jsonl"
    p = build("freeform", MUSICQA, metrics=["bleu"], rewrites=str(rewrites), keep_compared_only=True)
    full = build("freeform", MUSICQA, metrics=["bleu"], rewrites=str(rewrites))
    kept = set(p.scores("bleu").ids)
    assert kept < set(full.scores("bleu").ids)
    assert kept == set(p.scores("bleu", "random").ids) | (kept & set(p.scores("bleu", "skyline").ids))
    assert not p.metrics == full.metrics or p.metrics == ("bleu", PARSE_RATE)


def test_freeform_parse_rate_counts_empty_answers():
    items = [Item(id=f"i{k}", question="Describe", reference="a calm piano piece") for k in range(3)]
    responses = [Response("i0", "correct", "m", "Describe", "calm piano"), Response("i1", "correct", "m", "Describe", "  "),
                 Response("i2", "correct", "m", "Describe", "")]
    p = PROTOCOLS.get("freeform").from_answers(AnswerSet(items, responses, []), ProtocolSettings(options={"metrics": ["bleu"]}))
    assert p.scores(PARSE_RATE).values.tolist() == [1.0, 0.0, 0.0]
    assert p.conditions == ("correct", "random")  # all three share the prompt: derived Random


# --------------------------------------------------------------------------------------- mir


def test_mir_classification_equals_score_task_with_baseline_and_uniform_chance():
    from musiceval.data.cmibench import load_outputs
    from musiceval.protocols.mir.metrics.tasks import score_task

    path = MIR / "ltu" / "ltu_GTZAN.jsonl"
    p = build("mir", path)
    today = score_task("GTZAN", load_outputs(path).records)
    assert p.task == "GTZAN" and p.headline == "accuracy" and p.model == "ltu"
    s = p.scores("accuracy")
    assert s.ids == today.per_item["accuracy"].ids and np.array_equal(s.values, today.per_item["accuracy"].values)
    base, uniform = p.chances("accuracy")
    assert base.kind == "baseline" and base.name == "majority-class baseline" and base.scores.ids == s.ids
    assert base.value == today.baseline_metrics["accuracy"]
    assert uniform.kind == "fixed" and uniform.value == 0.1 and uniform.name == "uniform chance 1/10"
    unparsed = {f.item_id for f in today.failures}
    pr = p.scores(PARSE_RATE)
    assert pr.values.tolist() == [float(i not in unparsed) for i in pr.ids]
    assert {f.item_id for f in s.failures if f.reason.startswith("unparsed:")} == unparsed
    out = check_shapes(p)
    assert out["n_failed"] == len(unparsed) and out["accuracy"] == today.metrics["accuracy"]


def test_mir_random_is_the_same_prompt_derangement_scored_by_the_task_rules():
    from musiceval.conditions import random_recorded_responses
    from musiceval.data.cmibench import load_outputs
    from musiceval.protocols.mir.metrics.tasks import score_task

    path = MIR / "mullama" / "mullama_GS_key.jsonl"
    p = build("mir", path)
    assert "random" in p.conditions
    recs = load_outputs(path).records
    rr = random_recorded_responses([r.item_id for r in recs], [r.question for r in recs], [r.response for r in recs], 0,
                                   clips=[r.group for r in recs])
    deranged = [dataclasses.replace(r, response=rr.draws[0][r.item_id]) for r in recs if r.item_id in rr.draws[0]]
    expected = score_task("GS_key", deranged).per_item["weighted_score"]
    got = p.scores("weighted_score", "random")
    assert got.ids == expected.ids and np.array_equal(got.values, expected.values)
    assert sum(r.response != d.response for r, d in zip(recs, deranged)) > len(deranged) // 2
    assert p.chances("weighted_score")[0].name == "majority-key baseline"


def test_mir_regression_imputations_and_lyrics_direction():
    p = build("mir", MIR / "ltu" / "ltu_EMO_arousal.jsonl")
    imputed = [f for f in p.scores("r2").failures if f.reason.startswith("imputed:")]
    assert imputed and len(imputed) == int((p.scores(PARSE_RATE).values == 0).sum())
    assert p.chances("r2")[0].name == "mean predictor"
    lyr = build("mir", MIR / "ltu" / "ltu_DSing.jsonl")
    assert lyr.headline == "wer" and not lyr.metric_info("wer").higher_is_better and not lyr.metric_info("cer").higher_is_better
    assert lyr.chances("wer")[0].name == "empty transcript" and lyr.chances("wer")[0].value == 1.0
    beats = build("mir", MIR / "ltu" / "ltu_gtzan_beat.jsonl")
    assert beats.chances("f_measure")[0].name == "metronome at the median tempo"


def test_mir_max_items_and_tagging_chance():
    calls = []

    def embed(texts):  # a deterministic stand-in encoder: one-hot of a hash of the text
        calls.append(len(texts))
        out = np.zeros((len(texts), 16))
        for k, t in enumerate(texts):
            out[k, sum(map(ord, t)) % 16] = 1.0
        return out

    p = build("mir", MIR / "ltu" / "ltu_MTT.jsonl", max_items=40, embed=embed)
    assert p.headline == "item_roc_auc" and p.scores(PARSE_RATE).n == 40
    chances = p.chances("item_roc_auc")
    assert [c.name for c in chances] == ["chance AUC 0.5", "tag-frequency ranking", "most common response",
                                         "answer permutation"]
    assert chances[0].value == 0.5 and all(c.kind == "baseline" and c.scores.n for c in chances[1:])
    # the strategies are scored on the items the model's per-item AUC covers, paired by item id
    assert all(set(c.scores.ids) <= set(p.scores("item_roc_auc").ids) for c in chances[1:])
    assert "oracle prior" in chances[1].description and "most common response" not in chances[1].description
    assert "roc_auc" in p.evaluate() and calls


# ---------------------------------------------------------------------------------- triplets


def test_triplets_wrap_evaluate_triplets():
    from musiceval.vocab.audioset import load_ontology
    from musiceval.protocols.triplets.formats import generate_triplets
    from musiceval.protocols.triplets import TripletProtocol
    from musiceval.protocols.triplets.engine import evaluate_triplets
    from tests.protocols.test_triplet_scoring import CountingEncoder

    triplets = generate_triplets(load_ontology().subtree("genre"), seed=1, max_triplets=40)
    evaluation = evaluate_triplets(CountingEncoder(), triplets, "paper")
    p = TripletProtocol(evaluation)
    assert p.conditions == ("correct",) and p.metrics == ("accuracy",) and PARSE_RATE not in p.metrics
    assert np.array_equal(p.scores("accuracy").values, evaluation.item_scores().values)
    assert p.chances("accuracy")[0].value == 0.5
    out = check_shapes(p)
    assert out["accuracy"] == pytest.approx(evaluation.summary()["mean"])

    csv = FIXTURES / "text_encoders" / "triplets_sample.csv"
    q = TripletProtocol.from_encoder("counting", str(csv), settings=ProtocolSettings(options={"prompts": [0, 1]}),
                                     encoder=CountingEncoder())
    from musiceval.metrics.triplets import PAPER_PROMPTS

    assert tuple(q.evaluation.correct) == PAPER_PROMPTS[:2] and q.scores("accuracy").n == q.evaluation.n > 0
