"""``musiceval score <protocol> --json`` prints the numbers of ``Protocol.scores(...).mean()``
for the same file (one code path), detects the format when --format is absent, keeps today's
short --format names, and refuses a file given to the wrong protocol with exit code 2."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from musiceval import cli
from musiceval.data.formats import load_answers
from musiceval.protocols import PARSE_RATE, PROTOCOLS, ProtocolSettings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def block(out: dict, condition: str) -> dict:
    """A condition's numbers in ``musiceval score --json``'s one shape: Correct's are ``metrics``."""
    return out["metrics"] if condition == "correct" else out["conditions"][condition]

def run(capsys, *argv):
    code = cli.main(["score", *map(str, argv), "--json"])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else None), captured.err


def protocol(name, path, **options):
    return PROTOCOLS.get(name).from_answers(load_answers(path, protocol=name), ProtocolSettings(seed=0, options=options))


def test_choice_cli_equals_the_protocol(capsys):
    path = FIXTURES / "choice" / "dev_midashenglm.jsonl"
    code, out, _ = run(capsys, "choice", path)
    p = protocol("choice", path)
    assert code == 0 and out["protocol"] == "choice" and out["format"] == "dasheng-choice"
    assert out["metrics"]["accuracy"] == p.scores("accuracy").mean()
    assert out["metrics"]["ifr"] == out["metrics"]["parse_rate"] == p.scores(PARSE_RATE).mean()
    assert out["n"] == p.scores("accuracy").n
    code, old, _ = run(capsys, "choice", "--format", "dasheng", path)
    assert code == 0 and old["metrics"] == out["metrics"] and "conditions" not in out  # answers on Correct only


def test_factual_cli_equals_the_protocol(capsys):
    path = FIXTURES / "factual" / "nsynth_midashenglm.jsonl"
    code, out, _ = run(capsys, "factual", path, "--vocab", "nsynth", "--n-permutations", "300")
    p = protocol("factual", path, vocab="nsynth", n_permutations=300)
    assert code == 0 and out["format"] == "dasheng-factual"
    for condition in ("correct", "random"):
        for metric in ("precision", "recall", "f1", "accuracy"):
            assert block(out, condition)[metric] == pytest.approx(p.scores(metric, condition).mean(), abs=1e-12)
    assert out["chance"]["f1"] == pytest.approx(p.chances("f1")[0].value)
    code, old, _ = run(capsys, "factual", "--format", "dasheng", path, "--vocab", "nsynth", "--n-permutations", "300")
    assert code == 0 and old["metrics"] == out["metrics"] and old["conditions"] == out["conditions"]


def test_freeform_cli_equals_the_protocol(capsys):
    path = FIXTURES / "freeform" / "musicqa_dev_midashenglm.jsonl"
    code, out, _ = run(capsys, "freeform", path, "--metrics", "bleu,rouge_l")
    p = protocol("freeform", path, metrics=["bleu", "rouge_l"])
    assert code == 0 and out["format"] == "dasheng-musicqa"
    for condition in ("correct", "random"):
        for metric in ("bleu", "rouge_l"):
            assert block(out, condition)[metric] == p.scores(metric, condition).mean()


@pytest.mark.parametrize("task,metric", [("GTZAN", "accuracy"), ("GS_key", "weighted_score"), ("DSing", "wer"),
                                         ("gtzan_beat", "f_measure")])
def test_mir_cli_equals_the_protocol(capsys, task, metric):
    path = FIXTURES / "mir" / "outputs" / "mullama" / f"mullama_{task}.jsonl"
    code, out, _ = run(capsys, "mir", path)
    p = protocol("mir", path)
    assert code == 0 and out["task"] == task and out["model"] == "mullama"
    assert out["metrics"][metric] == pytest.approx(p.scores(metric).mean(), abs=1e-12)
    assert p.evaluate()[metric] == pytest.approx(out["metrics"][metric], abs=1e-12)


def test_a_file_given_to_the_wrong_protocol_exits_2_with_the_format_error(capsys):
    path = FIXTURES / "factual" / "nsynth_midashenglm.jsonl"
    code, out, err = run(capsys, "choice", path)
    assert code == 2 and out is None
    line = err.strip()
    assert "\n" not in line and str(path) in line and "feeds 'factual', not 'choice'" in line
    code, _, err = run(capsys, "mir", FIXTURES / "choice" / "dev_midashenglm.jsonl")
    assert code == 2 and "not 'mir'" in err
