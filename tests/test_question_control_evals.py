"""End to end, "the model answers the question": ``pytest evals/`` on a user's config in a subprocess,
checking the gate, the verdict word in results.json, the terminal's last line and the exit code.

- MiDashengLM's real MusicQA answers (../shared/data) shifted by one line of the file land on other
  questions of (mostly) the same track: the gate FAILs or is INCONCLUSIVE, never PASS, and so is the
  verdict; the answers in place PASS it;
- MuChoMusic questions asked several to a track, the answers moved to the next question of the
  same track: not PASS; in place: PASS.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
MUSICQA = SHARED / "musicqa" / "dev_midashenglm.jsonl"
MUCHOMUSIC = SHARED / "muchomusic" / "dev_midashenglm.jsonl"
CHECK = "answers_the_question"


def _need(path: Path) -> None:
    if not path.is_file():
        pytest.skip(f"{path} absent (../shared/data is optional)")


def _session(pytester: pytest.Pytester, config: str) -> tuple[pytest.RunResult, dict, dict]:
    """Run ``pytest evals/`` on ``config``: (the run, results.json, the question-control gate)."""
    (pytester.path / "evals").mkdir(exist_ok=True)
    shutil.copy(REPO / "evals" / "test_musiceval.py", pytester.path / "evals")
    (pytester.path / "musiceval.toml").write_text(config, encoding="utf-8")
    results = pytester.path / "results"
    shutil.rmtree(results, ignore_errors=True)
    out = pytester.runpytest_subprocess("evals", "-p", "no:cacheprovider", "--musiceval-results-dir", str(results),
                                        "--musiceval-cache-dir", str(pytester.path / "cache"))
    run = json.loads((results / "results.json").read_text(encoding="utf-8"))
    gates = [g for g in run["gates"] if f"/{CHECK}/" in g.get("check", "")]
    assert len(gates) == 1, [g.get("check") for g in run["gates"]]
    # one word everywhere: results.json, the terminal's last line, the exit code
    assert out.outlines[-1].startswith(f"musiceval: {run['verdict']}: "), out.outlines[-1]
    assert out.ret == (0 if run["verdict"] == "PASSED" else 1), (out.ret, run["verdict"], run["verdict_detail"])
    return out, run, gates[0]


def _shift_outputs(rows: list[dict], key: str) -> list[dict]:
    """Each row gets the previous row's ``key`` (the first gets the last's): answers one line off."""
    outputs = [r[key] for r in rows]
    return [{**r, key: o} for r, o in zip(rows, outputs[-1:] + outputs[:-1])]


MUSICQA_CONFIG = """
[[model]]
name = "ours"
[[model.answers]]
protocol = "freeform"
file = "musicqa.jsonl"
label = "MusicQA"
metrics = ["sentence_cosine"]
[defaults]
min_coverage = 0.05   # 400 of MusicQA's 5,040 questions
"""


def test_musicqa_answers_shifted_by_one_line_do_not_answer_the_question(pytester):
    _need(MUSICQA)
    rows = [json.loads(line) for line in MUSICQA.read_text(encoding="utf-8").splitlines() if line.strip()]
    (pytester.path / "musicqa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _shift_outputs(rows, "model_output")),
                                                 encoding="utf-8")
    out, run, gate = _session(pytester, MUSICQA_CONFIG)
    assert gate["check"] == f"freeform/{CHECK}/ours/MusicQA/sentence_cosine" and gate["role"] == "gate"
    assert gate["outcome"] in ("FAIL", "INCONCLUSIVE"), gate
    assert "moved to other questions about the same clip" in gate["name"] and "45 clips" in gate["detail"]
    # the shifted answers stay on the same track, so "the model listens" passes them: the question
    # control is what keeps the verdict from PASSED, and the verdict line names it
    assert run["verdict"] in ("FAILED", "INCONCLUSIVE") and out.ret == 1
    assert "answers the question" in out.outlines[-1]
    listens = next(g for g in run["gates"] if g.get("check") == "freeform/listens/ours/MusicQA/sentence_cosine")
    assert listens["outcome"] == "PASS"


def test_musicqa_answers_in_place_answer_the_question(pytester):
    _need(MUSICQA)
    shutil.copy(MUSICQA, pytester.path / "musicqa.jsonl")
    out, run, gate = _session(pytester, MUSICQA_CONFIG)
    assert gate["outcome"] == "PASS", gate
    assert gate["estimate"] > 0.1 and gate["n"] == 396  # 400 questions, 4 references that only copy the question
    assert run["verdict"] == "PASSED" and out.ret == 0


def _muchomusic_tracks(path: Path, *, per_track: int, n: int, shifted: bool) -> None:
    """MiDashengLM's real MuChoMusic answers in musiceval's layout, ``per_track`` questions to a track
    (the dasheng file gives each question its own clip), the answers moved to the next question of
    the same track when ``shifted``."""
    rows = [json.loads(line) for line in MUCHOMUSIC.read_text(encoding="utf-8").splitlines()[:n]]
    out = []
    for start in range(0, n, per_track):
        track = rows[start:start + per_track]
        texts = [r["model_output"] for r in track]
        if shifted:
            texts = texts[-1:] + texts[:-1]
        out += [{"item_id": Path(r["audio"]).stem, "question": r["question"], "choices": r["choices"],
                 "answer": r["answer"], "group": f"track{start // per_track:03d}", "condition": "correct", "text": t}
                for r, t in zip(track, texts)]
    path.write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")


MUCHOMUSIC_CONFIG = """
[[model]]
name = "ours"
[[model.answers]]
protocol = "choice"
file = "muchomusic.jsonl"
label = "MuChoMusic"
"""


@pytest.mark.parametrize("shifted", [True, False], ids=["moved-to-the-next-question", "in-place"])
def test_muchomusic_answers_moved_to_other_questions_of_the_track_do_not_pass(pytester, shifted):
    _need(MUCHOMUSIC)
    _muchomusic_tracks(pytester.path / "muchomusic.jsonl", per_track=4, n=200, shifted=shifted)
    out, run, gate = _session(pytester, MUCHOMUSIC_CONFIG)
    assert gate["check"] == f"choice/{CHECK}/ours/MuChoMusic/accuracy"
    if shifted:
        assert gate["outcome"] in ("FAIL", "INCONCLUSIVE"), gate
        assert run["verdict"] in ("FAILED", "INCONCLUSIVE") and out.ret == 1
    else:
        assert gate["outcome"] == "PASS", gate
