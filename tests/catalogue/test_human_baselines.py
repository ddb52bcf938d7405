"""The published human accuracy of a catalogue entry reaches the report as a FINDING beside the
model's accuracy and its interval, and never changes the verdict (docs/benchmarks.md, "Human
baselines"): ``musiceval run`` on MMAU's music subset (the paper's Table 3 figure) and HumMusQA
(no published figure), answered from a recorded file."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from musiceval.catalogue.mmau import FILE as MMAU_FILE, HUMAN_MUSIC
from musiceval.catalogue.spec import BENCHMARKS, get_benchmark
from musiceval.cli import main as cli_main
from musiceval.gates import Gate, GateConfig
from musiceval.human_baselines import HumanBaseline, position, read_human_baselines
from tests.catalogue.mirror import tone, url_file

MMAU_URL = "https://raw.githubusercontent.com/Sakshi113/MMAU/main/mmau-test-mini.json"
N_MUSIC, N_RIGHT = 12, 3


def _mmau_rows() -> list[dict]:
    rows = [{"id": f"m{k:02d}", "audio_id": f"./test-mini-audios/m{k:02d}.wav", "question": f"Music question {k}?",
             "choices": ["Piano", "Guitar", "Violin", "Drums"], "answer": "Piano", "task": "music", "split": "test-mini"}
            for k in range(N_MUSIC)]
    return rows + [{"id": "s00", "audio_id": "./test-mini-audios/s00.wav", "question": "A sound question?",
                    "choices": ["Dog", "Cat"], "answer": "Dog", "task": "sound"}]


@pytest.fixture
def mmau_mirror(hummusqa_mirror, tmp_path):
    """The MMAU question file on the URL mirror, a clip per music question, and recorded answers:
    the first ``N_RIGHT`` music questions right, the others wrong; HumMusQA all answered (A)."""
    rows = _mmau_rows()
    url_file(hummusqa_mirror["urls"], MMAU_URL, json.dumps(rows).encode())
    audio = tmp_path / "mmau-audio"
    for k, row in enumerate(rows):
        tone(audio / "test-mini-audios" / f"{row['id']}.wav", 200 + 20 * k)
    local = tmp_path / MMAU_FILE
    local.write_text(json.dumps(rows), encoding="utf-8")
    questions = get_benchmark("mmau-music").questions({MMAU_FILE: local})
    right = ["Piano"] * N_RIGHT + ["Guitar"] * (N_MUSIC - N_RIGHT)  # the mmau matcher reads the option's text
    answers = [{"item_id": q.id, "condition": "correct", "text": text} for q, text in zip(questions, right)]
    answers += [{"item_id": f"hq{k}", "condition": "correct", "text": "(A)"} for k in range(4)]
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_text("".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")
    return {**hummusqa_mirror, "audio": audio, "recorded": recorded}


def _human_rows(results: dict) -> list[dict]:
    return [g for g in results["gates"] if "published human accuracy" in g["name"]]


def _decided(results: dict) -> list[tuple]:
    return sorted((g["name"], g["outcome"], g.get("estimate"), tuple(g.get("ci") or ())) for g in results["gates"]
                  if "published human accuracy" not in g["name"])


def test_musiceval_run_shows_the_human_figure_as_a_finding_that_leaves_the_verdict_alone(mmau_mirror, tmp_path):
    out = tmp_path / "out"
    code = cli_main(["run", "--model", f"recorded:{mmau_mirror['recorded']}", "--benchmarks", "mmau-music,hummusqa",
                     "--conditions", "correct", "--audio-dir", f"mmau-music={mmau_mirror['audio']}",
                     "--data-root", str(mmau_mirror["data"]), "--cache-dir", str(tmp_path / "cache"), "--out", str(out),
                     "--no-progress"])
    results = json.loads((out / "results" / "results.json").read_text())
    assert code == (0 if results["verdict"] == "PASSED" else 1)
    (row,) = _human_rows(results)  # one figure, on MMAU music; none for HumMusQA, which publishes none
    assert row["outcome"] == "FINDING" and row["protocol"] == "choice" and "mmau-music" in row["name"]
    assert row["name"].endswith("(music)") and row["n"] == N_MUSIC
    values = [1.0] * N_RIGHT + [0.0] * (N_MUSIC - N_RIGHT)
    ci = Gate(GateConfig()).interval(values, [f"m{k:02d}" for k in range(N_MUSIC)], name=row["name"])
    assert math.isclose(row["estimate"], N_RIGHT / N_MUSIC)
    assert row["ci"] == pytest.approx([ci.low, ci.high]) and ci.high < HUMAN_MUSIC.accuracy
    assert row["detail"].startswith(f"model 0.25 [{ci.low:.2f}, {ci.high:.2f}] vs human 0.78, the human figure lies "
                                    "above the model's interval; source: MMAU paper (Sakshi et al., arXiv:2410.19168v1), "
                                    "Table 3, row 'Human (test-mini)'")
    report = (out / "results" / "report.md").read_text()
    assert re.search(r"\| FINDING \| [^|]*mmau-music: accuracy against published human accuracy \(music\) \|", report)
    assert f"model 0.25 [{ci.low:.2f}, {ci.high:.2f}] vs human 0.78, the human figure lies above the model's interval" in report
    assert "published human accuracy (music)" in (out / "results" / "report.html").read_text()
    from musiceval.suite.benchmark_runs import run_gates

    config = out / "musiceval.toml"
    junit = tmp_path / "junit.xml"
    run_gates(config, tmp_path / "again", [f"--junitxml={junit}"])  # JUnit XML: a finding like the others
    assert f'<property name="gate[{row["name"]}].outcome" value="FINDING" />' in junit.read_text()
    # the same answers without the figure: the same verdict and the same gates, less the finding
    config.write_text("".join(line for line in config.read_text().splitlines(keepends=True)
                              if not line.startswith("human_baselines")))
    assert run_gates(config, tmp_path / "without") in (0, 1)
    without = json.loads((tmp_path / "without" / "results.json").read_text())
    assert _human_rows(without) == [] and without["verdict"] == results["verdict"]
    assert _decided(without) == _decided(results)


def test_every_catalogue_figure_reads_back_from_its_answers_entry():
    from types import SimpleNamespace

    from musiceval.catalogue.answer_files import answers_entry

    with_figures = []
    for name, bench in BENCHMARKS.items():
        entry = answers_entry(bench, Path(f"{name}.jsonl"), SimpleNamespace(lock=SimpleNamespace(items=3)))
        if bench.human_baselines:
            with_figures.append(name)
            assert read_human_baselines(entry["human_baselines"], name) == dict(bench.human_baselines)
        else:
            assert "human_baselines" not in entry, name
    assert with_figures == ["mmau-music"]
    assert HUMAN_MUSIC == HumanBaseline(0.7822, HUMAN_MUSIC.source) and "arXiv:2410.19168v1" in HUMAN_MUSIC.source


@pytest.mark.parametrize("value, fix", [
    ({"music": {"accuracy": 78.22, "source": "paper"}}, "78.22 % is 0.7822"),
    ({"music": {"accuracy": 0.78}}, "name where the figure is published"),
    ({"music": {"accuracy": 0.78, "source": "paper", "n": 0}}, "the number of people"),
    ({"music": {"accuracy": 0.78, "source": "paper", "people": 3}}, "accuracy, source and optionally n"),
    ([0.78], "table of task or subset"),
])
def test_a_malformed_figure_names_the_field_and_the_fix(value, fix):
    with pytest.raises(ValueError, match=re.escape(fix)) as info:
        read_human_baselines(value, "answers #1: human_baselines")
    assert str(info.value).startswith("answers #1: human_baselines")


def test_the_figure_is_placed_against_the_interval():
    assert [position(h, 0.58, 0.66) for h in (0.7822, 0.62, 0.58, 0.5)] == ["above", "inside", "inside", "below"]


def test_a_config_with_a_malformed_figure_is_refused_at_start_up(tmp_path):
    from musiceval.suite.config import load_config
    from musiceval.suite.schema import ConfigError

    (tmp_path / "a.jsonl").write_text(json.dumps({"item_id": "1", "text": "x"}) + "\n", encoding="utf-8")
    (tmp_path / "musiceval.toml").write_text('[[model]]\nname = "m"\n[[model.answers]]\nprotocol = "choice"\n'
                                             'file = "a.jsonl"\n'
                                             'human_baselines = { music = { accuracy = 78.22, source = "paper" } }\n')
    with pytest.raises(ConfigError, match=r"human_baselines\.music\.accuracy: expected a share between 0 and 1"):
        load_config(None, tmp_path)
