"""The CLI frame: JSON contract, per-item file, input errors (exit 2, one line, no traceback), on
demo protocols whose ``score`` hook says what to print (docs/extending.md, "Score flags and output")."""
from __future__ import annotations

import json

import pytest

from musiceval import cli
from musiceval.data.errors import InputError
from musiceval.keys import Key
from musiceval.protocols.base import PROTOCOLS, Protocol, register_protocol
from musiceval.protocols.scoring import ScoreReport


class _Demo(Protocol):
    """test scorer"""

    name = "demo"
    answer_file = "a demo answer file"
    score_flags = {"boom": Key(str, None, "what goes wrong", choices=("input", "bug", "nan", "partial"))}
    conditions = ("correct",)
    metrics = ("accuracy",)

    @classmethod
    def from_answers(cls, answers, settings=None):
        return cls()

    def scores(self, metric, condition="correct"):
        raise KeyError(metric)

    @classmethod
    def score(cls, request):
        boom = request.options.get("boom")
        if boom == "input":
            raise InputError(f"{request.file}:3: field 'answer' missing; add it")
        if boom == "bug":
            raise KeyError("a bug, not an input error")
        value = float("nan") if boom == "nan" else 0.5
        failures = [{"item_id": "c", "error": "no answer letter"}]
        if boom == "partial":  # item a scored by one metric, failed by another
            failures.append({"item_id": "a", "error": "clap_audio: no audio"})
        return ScoreReport(2, {"accuracy": value}, failures=failures,
                           per_item=[{"item_id": "a", "accuracy": 1.0}, {"item_id": "b", "accuracy": 0.0}])


def _demo(name: str, score) -> type:
    return type(f"_{name.title()}", (_Demo,), {"name": name, "score": classmethod(score)})


def _score_none(cls, request):
    return ScoreReport(0, {}, failures=[{"item_id": "1", "error": "line is not valid UTF-8"}])


def _score_dir(cls, request):
    open(request.file)  # raises IsADirectoryError


DEMOS = (_Demo, _demo("none", _score_none), _demo("dir", _score_dir), _demo("empty", lambda cls, request: ScoreReport(0, {})))


@pytest.fixture(autouse=True)
def demo_protocols():
    for cls in DEMOS:
        register_protocol(cls)
    yield
    for cls in DEMOS:
        PROTOCOLS.unregister(cls.name)


def test_json_contract_and_per_item_file(tmp_path, capsys):
    per_item = tmp_path / "items.jsonl"
    assert cli.main(["score", "demo", "x.jsonl", "--json", "--per-item", str(per_item)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert json.loads(out) == {"protocol": "demo", "n": 2, "n_failed": 1, "metrics": {"accuracy": 0.5}}
    rows = [json.loads(line) for line in per_item.read_text().splitlines()]
    assert [r["item_id"] for r in rows] == ["a", "b", "c"] and rows[2]["error"] == "no answer letter"
    assert not list(tmp_path.glob("*.partial"))


def test_per_item_file_lists_a_failure_of_an_item_that_another_metric_scored(tmp_path):
    per_item = tmp_path / "items.jsonl"
    assert cli.main(["score", "demo", "x.jsonl", "--boom", "partial", "--per-item", str(per_item)]) == 0
    rows = [json.loads(line) for line in per_item.read_text().splitlines()]
    assert {"item_id": "a", "error": "clap_audio: no audio"} in rows and {"item_id": "a", "accuracy": 1.0} in rows


def test_non_finite_metric_prints_null_not_nan(capsys):
    assert cli.main(["score", "demo", "x", "--json", "--boom", "nan"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["accuracy"] is None


def test_input_error_is_one_line_exit_2(tmp_path, capsys):
    per_item = tmp_path / "items.jsonl"
    assert cli.main(["score", "demo", "in.jsonl", "--boom", "input", "--json", "--per-item", str(per_item)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.strip() == "musiceval: error: in.jsonl:3: field 'answer' missing; add it"
    assert not per_item.exists()  # never a partial result under the requested name


def test_debug_shows_the_traceback():
    with pytest.raises(InputError):
        cli.main(["score", "demo", "in", "--boom", "input", "--debug"])


def test_unknown_format_and_protocol_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["score", "demo", "x", "--format", "nope"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        cli.main(["score", "no-such-protocol", "x"])
    assert exc.value.code == 2


def test_every_protocol_is_registered():
    from musiceval.commands.score import load_scorers

    assert {"freeform", "factual", "choice", "mir", "triplets"} <= set(load_scorers())


def test_nothing_scorable_is_an_input_error_with_the_first_reason(capsys, tmp_path):
    per_item = tmp_path / "items.jsonl"
    assert cli.main(["score", "none", "in.jsonl", "--json", "--per-item", str(per_item)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "in.jsonl: no item could be scored (1 failed; first: line is not valid UTF-8)" in captured.err
    assert "not valid UTF-8" in per_item.read_text()  # the reasons are kept for diagnosis


def test_a_directory_is_named(tmp_path, capsys):
    assert cli.main(["score", "dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"musiceval: error: {tmp_path}: is a directory; pass a file"


def test_an_empty_result_without_failures_is_an_input_error(capsys):
    assert cli.main(["score", "empty", "in.jsonl"]) == 2
    assert "first: the input has no items" in capsys.readouterr().err
