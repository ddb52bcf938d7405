"""A plugin protocol's own ``musiceval score`` flags and output (docs/extending.md, "Score flags and
output"): the keys it declares in ``score_flags`` are flags with their help, default, words and range,
their values reach ``from_answers``, and ``score_extra`` / ``score_rows`` add JSON keys and per-item
rows, through the one scorer the built-in protocols use."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from musiceval import cli
from musiceval.data.answers import AnswerSet
from musiceval.data.formats import FORMATS, register_format
from musiceval.keys import Key
from musiceval.protocols.base import PROTOCOLS, Protocol, register_protocol
from musiceval.ranges import AT_LEAST_ONE
from musiceval.records import Item, ItemScores, Response

QUESTION = "Which pulse?"


def load_pulse(path: Path) -> AnswerSet:
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    items = [Item(id=r["id"], question=QUESTION, reference=r["truth"], group=r["id"]) for r in rows]
    responses = [Response(r["id"], "correct", "model", QUESTION, r["answer"]) for r in rows]
    return AnswerSet(items, responses, [])


class PulseProtocol(Protocol):
    """pulse words: accuracy of the answer word"""

    name = "pulse"
    headline = "accuracy"
    answer_file = "a pulse answer file (JSON lines: id, truth, answer)"
    score_flags = {
        "tone": Key(str, "plain", "how answers are read", choices=("plain", "shout")),
        "min_len": Key(int, 1, "shortest answer read", AT_LEAST_ONE, metavar="N"),
        "loud": Key(bool, False, "also count shouted answers", switch=True),
    }
    conditions = ("correct",)
    metrics = ("accuracy",)

    def __init__(self, ids, values, options):
        self.ids, self.values, self.options = ids, values, options

    @classmethod
    def from_answers(cls, answers, settings=None):
        said = {r.item_id: r.text for r in answers.responses}
        ids = [it.id for it in answers.items]
        values = np.array([float(said[it.id] == it.reference) for it in answers.items])
        return cls(ids, values, dict(settings.options))

    def scores(self, metric, condition="correct"):
        self.check(metric, condition)
        return ItemScores("accuracy", self.ids, self.values, condition="correct")

    def score_extra(self):
        return {"options": self.options}

    def score_rows(self):
        return [{"item_id": i, "hit": bool(v)} for i, v in zip(self.ids, self.values)]


@pytest.fixture(autouse=True)
def pulse():
    register_format("pulse-jsonl", protocols=("pulse",), detect=lambda path, records: bool(records) and "truth" in records[0],
                    description="pulse answers")(load_pulse)
    register_protocol(PulseProtocol)
    yield
    PROTOCOLS.unregister("pulse")
    FORMATS.unregister("pulse-jsonl")


@pytest.fixture
def answers(tmp_path) -> Path:
    rows = [{"id": f"p{k}", "truth": "fast" if k % 2 else "slow", "answer": "fast" if k % 3 else "slow"} for k in range(12)]
    path = tmp_path / "pulse.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _score(capsys, *argv) -> dict:
    assert cli.main(["score", "pulse", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_declared_flags_reach_from_answers_and_extra_keys_and_rows_are_printed(answers, capsys, tmp_path):
    per_item = tmp_path / "rows.jsonl"
    got = _score(capsys, answers, "--tone", "shout", "--min-len", "3", "--loud", "--per-item", per_item)
    assert got["options"] == {"tone": "shout", "min_len": 3, "loud": True}
    assert got["protocol"] == "pulse" and got["format"] == "pulse-jsonl" and got["n"] == 12
    rows = [json.loads(line) for line in answers.read_text().splitlines()]
    assert got["metrics"]["accuracy"] == pytest.approx(np.mean([r["truth"] == r["answer"] for r in rows]))
    assert "accuracy" in got["intervals"]  # the headline's interval, as for every protocol
    written = [json.loads(line) for line in per_item.read_text().splitlines()]
    assert written == [{"item_id": r["id"], "hit": r["truth"] == r["answer"]} for r in rows]
    # not given: each key's default, as a config section passes its keys
    assert _score(capsys, answers)["options"] == {"tone": "plain", "min_len": 1, "loud": False}


def test_declared_flags_are_checked_and_documented(answers, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["score", "pulse", str(answers), "--tone", "whisper"])
    assert exc.value.code == 2 and "plain" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["score", "pulse", str(answers), "--min-len", "0"])
    assert exc.value.code == 2 and "--min-len" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["score", "pulse", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--tone {plain,shout} how answers are read (default 'plain')" in text
    assert "--min-len N shortest answer read (default 1)" in text and "--loud also count shouted answers" in text
