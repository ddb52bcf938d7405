"""Extending musiceval from outside the package: a metric (chrF) and an answer format (a toy
multiple-choice CSV), each registered with one decorator in this test module, reach the
protocols and the CLI without touching musiceval's code."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from musiceval.data.answers import AnswerSet
from musiceval.data.formats import FORMATS, detect_format, load_answers, register_format
from musiceval.metrics.registry import METRICS, MetricContext, metric_names, register_metric
from musiceval.protocols import PROTOCOLS, ProtocolSettings
from musiceval.records import Item, ItemFailure, Response

sacrebleu = pytest.importorskip("sacrebleu", reason="the reference chrF needs sacrebleu (pip install 'musiceval[reference]')")
MUSICQA = Path(__file__).resolve().parents[1] / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl"


# ------------------------------------------------------------------- a metric: chrF (Popovic 2015)


def _char_ngrams(text: str, n: int) -> dict[str, int]:
    s = text.replace(" ", "")
    out: dict[str, int] = {}
    for k in range(len(s) - n + 1):
        out[s[k:k + n]] = out.get(s[k:k + n], 0) + 1
    return out


def chrf_sentence(candidate: str, reference: str, order: int = 6, beta: float = 2.0) -> float:
    """chrF (Popovic 2015): character n-gram F-beta, n = 1..6 averaged, whitespace removed, 0-100
    (sacrebleu's definition: precision and recall averaged over the orders that have n-grams)."""
    precisions, recalls = [], []
    for n in range(1, order + 1):
        hyp, ref = _char_ngrams(candidate, n), _char_ngrams(reference, n)
        match = sum(min(c, ref.get(g, 0)) for g, c in hyp.items())
        if hyp and ref:
            precisions.append(match / sum(hyp.values()))
            recalls.append(match / sum(ref.values()))
        elif hyp or ref:
            precisions.append(0.0)
            recalls.append(0.0)
    if not precisions:
        return 0.0
    p, r = float(np.mean(precisions)), float(np.mean(recalls))
    return 0.0 if p + r == 0 else 100 * (1 + beta ** 2) * p * r / (beta ** 2 * p + r)


@register_metric("chrf", role="finding", unit="chrF (0-100)", description="character n-gram F-score (Popovic 2015)",
                 replace=True)
def chrf(candidates, references, context: MetricContext) -> np.ndarray:
    """chrF against the best-matching reference."""
    return np.array([max(chrf_sentence(c, r) for r in refs) for c, refs in zip(candidates, references)])


def test_chrf_matches_sacrebleu():
    from sacrebleu.metrics import CHRF

    scorer = CHRF()
    pairs = [("a calm piano piece", "A calm solo piano piece."), ("rock with drums", "an ambient track with synth pads"),
             ("", "something"), ("same text here", "same text here")]
    for cand, ref in pairs:
        assert chrf_sentence(cand, ref) == pytest.approx(scorer.sentence_score(cand, [ref]).score, abs=1e-6)


def test_a_registered_metric_reaches_the_freeform_protocol_and_the_cli(capsys):
    assert "chrf" in METRICS and "chrf" in metric_names("freeform")
    from musiceval.protocols.freeform import FreeformProtocol

    answers = load_answers(MUSICQA, protocol="freeform")
    protocol = FreeformProtocol.from_answers(answers, ProtocolSettings(seed=0))
    assert "chrf" in protocol.metrics and protocol.metric_info("chrf").role == "finding"
    p = FreeformProtocol.from_answers(answers, ProtocolSettings(seed=0, options={"metrics": ["chrf"]}))
    correct, random = p.scores("chrf"), p.scores("chrf", "random")
    first = answers.items[0]
    assert correct.values[0] == pytest.approx(chrf_sentence(answers.responses[0].text, first.reference))
    assert correct.mean() > random.mean()  # answers about the clip share more characters with its reference

    from musiceval import cli

    assert cli.main(["score", "freeform", str(MUSICQA), "--metrics", "chrf", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"]["chrf"] == pytest.approx(correct.mean())
    assert out["conditions"]["random"]["chrf"] == pytest.approx(random.mean())


# ------------------------------------------------------------- an answer format: a toy choice CSV

TOY_HEADER = ["qid", "question", "option_a", "option_b", "option_c", "option_d", "gold", "reply"]


@register_format("toy-choice-csv", protocols=("choice",), replace=True,
                 detect=lambda path, records: bool(records) and isinstance(records[0], dict) and set(TOY_HEADER) <= set(records[0]),
                 description="toy multiple-choice CSV answers")
def load_toy_choice_csv(path: Path) -> AnswerSet:
    """A CSV with one question per row: four options, the gold letter and the model's reply."""
    items, responses, failures = [], [], []
    with open(path, newline="", encoding="utf-8") as fh:
        for k, row in enumerate(csv.DictReader(fh), start=2):
            if row["gold"] not in ("A", "B", "C", "D"):
                failures.append(ItemFailure(f"{path.name}:{k}", f"gold letter {row['gold']!r} is not A-D"))
                continue
            items.append(Item(id=row["qid"], question=row["question"],
                              choices=(row["option_a"], row["option_b"], row["option_c"], row["option_d"]), answer=row["gold"]))
            responses.append(Response(item_id=row["qid"], condition="correct", model="toy-model", prompt=row["question"],
                                      text=row["reply"]))
    return AnswerSet(items, responses, failures, model="toy-model")


def test_a_registered_answer_format_feeds_the_choice_protocol(tmp_path):
    path = tmp_path / "answers.csv"
    rows = [("q1", "Which instrument?", "piano", "violin", "flute", "drums", "A", "A"),
            ("q2", "Which genre?", "jazz", "rock", "pop", "folk", "B", "The answer is (B) rock"),
            ("q3", "Which tempo?", "slow", "medium", "fast", "very fast", "C", "A"),
            ("q4", "Which key?", "C major", "A minor", "G major", "E minor", "A", "I cannot tell"),
            ("q5", "Which mood?", "happy", "sad", "calm", "angry", "Z", "A")]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(TOY_HEADER)
        writer.writerows(rows)
    assert "toy-choice-csv" in FORMATS.names()
    fmt = detect_format(path, "choice")
    assert fmt.name == "toy-choice-csv"
    answers = load_answers(path, protocol="choice")
    assert answers.format == "toy-choice-csv" and len(answers.items) == 4 and len(answers.failures) == 1
    protocol = PROTOCOLS.get("choice").from_answers(answers, ProtocolSettings())
    acc = protocol.scores("accuracy")
    assert acc.ids == ("q1", "q2", "q3", "q4")
    assert acc.values.tolist() == [1.0, 1.0, 0.0, 0.0]
    assert protocol.scores("parse_rate").values.tolist() == [1.0, 1.0, 1.0, 0.0]
    assert protocol.chances("accuracy")[0].value == 0.25
    assert protocol.model == "toy-model"
    reasons = [f.reason for f in acc.failures]
    assert any("gold letter 'Z'" in r for r in reasons) and any(r.startswith("unparsed:") for r in reasons)


# ------------------------------------------------------------- a model adapter (docs/extending.md)


def test_a_registered_model_adapter_is_loaded_by_its_prefix():
    from musiceval.models.base import Answer, GenerationSettings, Request, load_model, register_model

    @register_model("echo-test")
    class EchoModel:
        def __init__(self, rest: str, **options):
            self.word = rest or "piano"
            self.spec = f"echo-test:{self.word}"
            self.revision = "1"
            self.sample_rate = 16_000
            self.max_audio_seconds = None
            self.chunk_seconds = None

        def generate(self, requests, settings):
            return [Answer(text=self.word) for _ in requests]

        def close(self):
            pass

    model = load_model("echo-test:violin")
    answers = model.generate([Request("i", "Which instrument?", np.zeros(16_000, dtype=np.float32))], GenerationSettings())
    assert model.spec == "echo-test:violin" and answers[0].text == "violin"
