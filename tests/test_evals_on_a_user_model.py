"""The release gates on a user's own model, end to end: ``pytest evals/`` with a suite config that
declares answer files (written here from the real outputs in ../shared/data), run in a subprocess.

- every protocol's gates run on the declared files and on nothing else (no shipped demo model);
- a CMI-Bench outputs directory of any model name is gated task by task;
- answers that ignore the audio (every condition answered identically) FAIL "the model listens"
  for every protocol that has controls;
- ``musiceval score`` prints the numbers the gates use.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from musiceval.cli import main as cli_main

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"


def _need_shared() -> None:
    if not (SHARED / "cmi-bench" / "outputs" / "mullama").is_dir():
        pytest.skip(f"{SHARED} absent (../shared/data is optional)")


def _project(pytester: pytest.Pytester, config: str) -> pytest.Pytester:
    (pytester.path / "evals").mkdir()
    shutil.copy(REPO / "evals" / "test_musiceval.py", pytester.path / "evals")
    (pytester.path / "musiceval.toml").write_text(config, encoding="utf-8")
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    results = pytester.path / "results"
    out = pytester.runpytest_subprocess("evals", "-p", "no:cacheprovider", "--musiceval-results-dir", str(results),
                                        "--musiceval-cache-dir", str(pytester.path / "cache"), *args)
    return out, json.loads((results / "results.json").read_text(encoding="utf-8"))


def _slice(src: Path, dst: Path, n: int) -> Path:
    """The first ``n`` records of a JSON-lines or CMI-Bench (JSON array) file."""
    text = src.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        dst.write_text(json.dumps(json.loads(text)[:n]), encoding="utf-8")
    else:
        dst.write_text("".join(line + "\n" for line in text.splitlines()[:n]), encoding="utf-8")
    return dst


def test_every_protocol_gates_the_declared_files_and_nothing_else(pytester):
    _need_shared()
    outputs = pytester.path / "ours-cmi"
    outputs.mkdir()
    for task in ("GTZAN", "GS_key", "gtzan_beat"):  # a model name the suite has never seen
        _slice(SHARED / "cmi-bench" / "outputs" / "mullama" / f"mullama_{task}.jsonl", outputs / f"qwen9x_{task}.jsonl", 120)
    _slice(SHARED / "muchomusic" / "dev_midashenglm.jsonl", pytester.path / "choice.jsonl", 120)
    _slice(SHARED / "nsynth" / "dev_midashenglm.jsonl", pytester.path / "nsynth.jsonl", 120)
    _project(pytester, """
[[model]]
name = "ours"
[[model.answers]]
protocol = "mir"
dir = "ours-cmi"
[[model.answers]]
protocol = "choice"
file = "choice.jsonl"
[[model.answers]]
protocol = "factual"
file = "nsynth.jsonl"
vocab = "nsynth"
""")
    out, run = _run(pytester, "-n", "2")
    gates = [g for g in run["gates"] if g["outcome"] not in ("N/A", "SKIPPED")]
    assert {g["model"] for g in gates} == {"ours"}
    assert {g["source"] for g in gates} == {"GTZAN", "GS_key", "gtzan_beat", "choice", "nsynth"}
    assert {g["protocol"] for g in gates} == {"mir", "choice", "factual"}
    checks = {g["check"] for g in gates}
    for task, metric in (("GTZAN", "accuracy"), ("GS_key", "weighted_score"), ("gtzan_beat", "f_measure")):
        assert f"mir/beats_chance/ours/{task}/{metric}" in checks, task  # one chance gate per metric
        assert f"mir/parse_rate/ours/{task}/parse_rate" in checks
    assert "choice/beats_chance/ours/choice/accuracy" in checks
    assert not any(c.startswith("choice/beats_chance/ours/choice/accuracy/") for c in checks)  # no per-strategy gates
    assert "factual/listens/ours/nsynth/f1" in checks
    assert out.ret in (0, 1)  # MU-LLaMA's answers may fail gates; what matters is what they are about

    # the CLI prints the numbers the gates use: the accuracy and every answer-blind strategy's value
    acc = next(g for g in gates if g["check"] == "choice/beats_chance/ours/choice/accuracy")
    printed = json.loads(_stdout_of(["score", "choice", str(pytester.path / "choice.jsonl"), "--json"]))
    assert f"accuracy={printed['metrics']['accuracy']:.4g};" in acc["detail"]
    assert [c["name"] for c in printed["chances"]["accuracy"]] == ["uniform chance 1/4", "best constant answer",
                                                                  "answer permutation"]
    for chance in printed["chances"]["accuracy"]:
        assert f"{chance['name']}: {chance['value']:.4g}, " in acc["detail"]


def _stdout_of(argv: list[str]) -> str:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli_main(argv) == 0
    return buf.getvalue()


def _deaf_files(root: Path) -> None:
    """Answers that ignore the audio: every condition (and every clip of a prompt) answered identically."""
    rows = []
    for i in range(60):
        base = {"item_id": f"q{i}", "question": f"Question {i}?", "choices": ["a", "b", "c", "d"],
                "answer": "ABCD"[i % 4], "group": f"t{i}"}
        for condition in ("correct", "noise", "text_only"):
            rows.append({**base, "condition": condition, "text": "(A)"})
    (root / "choice.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    labels = ["bass", "guitar", "keyboard", "organ"]
    (root / "factual.jsonl").write_text("".join(json.dumps(
        {"dataset_name": "NSynth", "audio": f"clip{i}.wav", "label": [labels[i % 4]], "prompt": "What's the music instrument?",
         "model_output": "It is a guitar.", "model_name": "deaf"}) + "\n" for i in range(60)), encoding="utf-8")
    (root / "freeform.jsonl").write_text("".join(json.dumps(
        {"question": "Describe the audio", "answer": f"A calm piece number {i} with piano and strings.",
         "audio": f"clip{i}.flac", "model_output": "An upbeat rock song with drums.", "model_name": "deaf"}) + "\n"
        for i in range(60)), encoding="utf-8")
    cmi = root / "cmi"
    cmi.mkdir()
    genres = ["blues", "classical", "country", "disco", "jazz"]
    (cmi / "deaf_GTZAN.jsonl").write_text(json.dumps([
        {"question": "Identify the genre.", "response": "rock", "correct_answer": genres[i % 5], "audioid": f"data/g{i}.wav"}
        for i in range(60)]), encoding="utf-8")


def test_answers_that_ignore_the_audio_fail_the_model_listens_for_every_protocol(pytester):
    _deaf_files(pytester.path)
    _project(pytester, """
[[model]]
name = "deaf"
[[model.answers]]
protocol = "choice"
file = "choice.jsonl"
[[model.answers]]
protocol = "factual"
file = "factual.jsonl"
vocab = "nsynth"
[[model.answers]]
protocol = "freeform"
file = "freeform.jsonl"
metrics = ["sentence_cosine", "bleu"]
[[model.answers]]
protocol = "mir"
dir = "cmi"
""")
    out, run = _run(pytester, "-k", "listens")
    listens = {g["protocol"]: g for g in run["gates"] if "/listens/" in g.get("check", "")}
    assert set(listens) == {"choice", "factual", "freeform", "mir"}
    assert {p: g["outcome"] for p, g in listens.items()} == dict.fromkeys(listens, "FAIL")
    assert all("score identically on every one" in g["detail"] and g["test"].startswith("exact") for g in listens.values())
    assert out.ret == 1


def test_a_file_given_to_the_wrong_protocol_stops_the_session(pytester):
    _need_shared()
    shutil.copy(SHARED / "nsynth" / "dev_midashenglm.jsonl", pytester.path / "nsynth.jsonl")
    _project(pytester, '[[model]]\nname = "m"\n[[model.answers]]\nprotocol = "choice"\nfile = "nsynth.jsonl"\n')
    out = pytester.runpytest_subprocess("evals", "-p", "no:cacheprovider", "--musiceval-results-dir",
                                        str(pytester.path / "r"))
    assert out.ret == 2
    assert "nsynth.jsonl" in out.stderr.str() and "'choice'" in out.stderr.str()


def test_an_answer_file_on_the_command_line_is_the_model_under_test(pytester):
    _need_shared()
    path = _slice(SHARED / "muchomusic" / "dev_midashenglm.jsonl", pytester.path / "mc.jsonl", 80)
    _project(pytester, "")
    out, run = _run(pytester, "--musiceval-model", f"recorded:{path}")
    decided = [g for g in run["gates"] if g["outcome"] in ("PASS", "FAIL")]
    assert decided and {g["model"] for g in decided} == {"MiDashengLM"} and {g["protocol"] for g in decided} == {"choice"}
    # 80 of MuChoMusic's 1,187 questions: the coverage gate fails, and says so on the verdict line
    assert out.ret == 1 and run["verdict"] == "FAILED"
    assert out.outlines[-1].startswith("musiceval: FAILED: MiDashengLM:") and "covers 80 of 1,187 items" in out.outlines[-1]
    out, run = _run(pytester, "--musiceval-model", f"recorded:{path}", "--musiceval-option", "defaults.min_coverage=0.05")
    assert out.ret == 0 and run["verdict"] == "PASSED"


REGRESSION_CONFIG = """
[[model]]
name = "{name}"
[[model.answers]]
protocol = "choice"
file = "{file}"
label = "MuChoMusic"
[choice]
regression_margin = 0.25
[defaults]
min_coverage = 0.1   # the answers are a slice of MuChoMusic
{baseline}
"""


def _regression_project(pytester: pytest.Pytester) -> tuple[Path, Path]:
    _need_shared()
    (pytester.path / "evals").mkdir()
    shutil.copy(REPO / "evals" / "test_musiceval.py", pytester.path / "evals")
    good = _slice(SHARED / "muchomusic" / "dev_midashenglm.jsonl", pytester.path / "v1.jsonl", 150)
    rows = [json.loads(line) for line in good.read_text().splitlines()]
    for row in rows:  # v2 forgets what it knew: every answer the first option that is wrong
        row["model_output"] = next(letter for letter in "ABCD" if letter != row["answer"])
    bad = pytester.path / "v2.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return good, bad


def _regression_run(pytester, name: str, file: Path, baseline: str, results: str, *args: str):
    (pytester.path / "musiceval.toml").write_text(REGRESSION_CONFIG.format(name=name, file=file.name, baseline=baseline))
    out = pytester.runpytest_subprocess("evals", "-p", "no:cacheprovider", "--musiceval-results-dir",
                                        str(pytester.path / results), *args)
    run = json.loads((pytester.path / results / "results.json").read_text())
    return out, [g for g in run["gates"] if "/regression/" in g.get("check", "")]


def test_regression_gates_against_a_previous_run_and_against_answer_files(pytester):
    good, bad = _regression_project(pytester)
    out, gates = _regression_run(pytester, "v1", good, "", "r1")
    assert out.ret == 0 and all(g["outcome"] == "N/A" for g in gates)  # no baseline declared: not applicable
    out, gates = _regression_run(pytester, "v1b", good, '[baseline]\nresults = "r1"', "r2")
    accuracy = next(g for g in gates if g["metric"] == "accuracy")
    assert accuracy["outcome"] == "PASS" and accuracy["estimate"] == 0.0 and accuracy["test"].endswith("identical on every item")
    assert "v1" in accuracy["detail"] and "v1b" in accuracy["detail"]
    out, gates = _regression_run(pytester, "v2", bad, '[baseline]\nname = "v1"\n[[baseline.answers]]\nprotocol = "choice"\n'
                                                       'file = "v1.jsonl"\nlabel = "MuChoMusic"', "r3")
    accuracy = next(g for g in gates if g["metric"] == "accuracy")
    assert accuracy["outcome"] == "FAIL" and accuracy["estimate"] < -0.25 and out.ret == 1


def test_runs_whose_scorer_side_differs_are_refused(pytester):
    good, _ = _regression_project(pytester)
    _regression_run(pytester, "v1", good, "", "r1", "--musiceval-seed", "1")
    out, _ = _regression_run(pytester, "v1b", good, '[baseline]\nresults = "r1"', "r2")
    assert out.ret == 1
    out.stdout.fnmatch_lines(["*not comparable with the baseline*", "*scorer.seed: 1 (A) != 0 (B)*"])


BASELINE_LACKS_A_TASK = """
[[model]]
name = "qwen2"
[[model.answers]]
protocol = "mir"
dir = "qwen2"
[defaults]
min_coverage = 0.01   # slices of the published files
[baseline]
name = "qwen"
[[baseline.answers]]
protocol = "mir"
dir = "qwen"
"""


def test_a_baseline_lacking_a_task_leaves_that_task_not_applicable_and_the_others_decided(pytester):
    """The baseline has no MTG_genre and an EMO_valence its protocol refuses as a whole: MTG_genre's
    regression gate is not applicable ("not in the baseline"), no other source's error reaches it,
    and the verdict is the gates' own."""
    _need_shared()
    for model, tasks in (("qwen2", ("GTZAN", "MTG_genre", "EMO_valence")), ("qwen", ("GTZAN", "EMO_valence"))):
        (pytester.path / model).mkdir()
        for task in tasks:
            _slice(SHARED / "cmi-bench" / "outputs" / "ltu" / f"ltu_{task}.jsonl", pytester.path / model / f"{model}_{task}.jsonl", 120)
    out, run = _run(_project(pytester, BASELINE_LACKS_A_TASK))
    assert run["verdict"] in ("PASSED", "FAILED", "INCONCLUSIVE"), run["verdict_detail"]
    assert out.ret == (0 if run["verdict"] == "PASSED" else 1)
    regression = {g["source"]: g for g in run["gates"] if "/regression/" in g.get("check", "") or
                  g["name"].startswith("test_not_worse_than_the_baseline")}
    genre = regression["MTG_genre"]
    assert genre["outcome"] == "N/A" and "not in the baseline" in genre["detail"], genre
    gtzan = [g for g in run["gates"] if g.get("source") == "GTZAN" and "/regression/" in g.get("check", "")]
    assert gtzan and all(g["outcome"] in ("PASS", "FAIL", "INCONCLUSIVE") for g in gtzan)
    assert not run["errors"]
    last = out.outlines[-1]
    assert last.startswith(f"musiceval: {run['verdict']}: qwen2") and "EMO_valence" not in last


MIR_ONLY = """
[[model]]
name = "{name}"
[[model.answers]]
protocol = "mir"
dir = "{dir}"
{extra}
"""


@pytest.mark.parametrize("compat", ["", "cmi-bench@2cafca5"])
def test_a_constant_emo_answer_fails_the_model_not_the_session(pytester, compat):
    """Every EMO_arousal answer "5" (LTU's file, responses replaced): the ratings have no spread, which
    is the model's doing, so R^2 is scored (docs/cmi-bench.md, "Undefined metrics") and the model
    FAILs; the word is never ERROR, in either mode (the toolkit at 2cafca5 raised here)."""
    _need_shared()
    (pytester.path / "ours").mkdir()
    rows = json.loads((SHARED / "cmi-bench" / "outputs" / "ltu" / "ltu_EMO_arousal.jsonl").read_text(encoding="utf-8"))
    (pytester.path / "ours" / "ours_EMO_arousal.jsonl").write_text(
        json.dumps([{**r, "response": "5"} for r in rows]), encoding="utf-8")
    _project(pytester, MIR_ONLY.format(name="ours", dir="ours", extra=f'[mir]\ncompat = "{compat}"' if compat else ""))
    out, run = _run(pytester)
    assert run["verdict"] == "FAILED", run.get("verdict_detail")
    assert out.ret == 1
    assert out.outlines[-1].startswith("musiceval: FAILED: ours")
    assert not run["errors"]
    gates = {g["check"]: g for g in run["gates"] if g.get("source") == "EMO_arousal"}
    assert gates["mir/listens/ours/EMO_arousal/r2"]["outcome"] == "FAIL"
    chance = [g for c, g in gates.items() if c.startswith("mir/beats_chance/ours/EMO_arousal/r2")]
    assert chance and all(g["outcome"] in ("FAIL", "INCONCLUSIVE") for g in chance)
    if not compat:  # the mean predictor item by item: decided exactly
        assert all(g["outcome"] == "FAIL" and "identical" in g["test"] for g in chance)
    assert gates["mir/parse_rate/ours/EMO_arousal/parse_rate"]["outcome"] == "PASS"  # "5" was read


def test_compare_has_a_row_for_every_gated_captioning_metric(pytester):
    """MusicCaps and SDD answers gated twice: v1, then v2 (a few captions changed) against v1's answer
    files, whose regression gates decide every captioning metric. ``musiceval compare v1 v2`` has a row
    for exactly the metrics a gate decided (the census gates, coverage and readable lines, count the
    file and have no per-item metric), because each run records every metric it scored per item."""
    from musiceval.results.comparison import compare_runs

    _need_shared()
    for model in ("v1", "v2"):
        (pytester.path / model).mkdir()
    for task, n in (("MusicCaps", 32), ("SDD", 28)):
        rows = json.loads((SHARED / "cmi-bench" / "outputs" / "ltu" / f"ltu_{task}.jsonl").read_text(encoding="utf-8"))[:n]
        (pytester.path / "v1" / f"v1_{task}.jsonl").write_text(json.dumps(rows), encoding="utf-8")
        changed = [{**r, "response": "A slow piano ballad with soft vocals."} if k % 6 == 0 else r for k, r in enumerate(rows)]
        (pytester.path / "v2" / f"v2_{task}.jsonl").write_text(json.dumps(changed), encoding="utf-8")
    extra = "[defaults]\nmin_coverage = 0.01"
    _project(pytester, MIR_ONLY.format(name="v1", dir="v1", extra=extra))
    pytester.runpytest_subprocess("evals", "-p", "no:cacheprovider", "--musiceval-results-dir", str(pytester.path / "r1"),
                                  "--musiceval-cache-dir", str(pytester.path / "cache"))
    (pytester.path / "musiceval.toml").write_text(MIR_ONLY.format(
        name="v2", dir="v2", extra=extra + '\n[baseline]\nname = "v1"\n[[baseline.answers]]\nprotocol = "mir"\ndir = "v1"'),
        encoding="utf-8")
    out, run = _run(pytester)
    assert run["verdict"] in ("PASSED", "FAILED", "INCONCLUSIVE"), run.get("verdict_detail")
    first = json.loads((pytester.path / "r1" / "results.json").read_text(encoding="utf-8"))
    gated = {(g["source"], g["metric"]) for r in (first, run) for g in r["gates"]
             if g["outcome"] in ("PASS", "FAIL", "INCONCLUSIVE") and not g.get("test", "").startswith("census")}
    for task in ("MusicCaps", "SDD"):  # the regression gates decide every captioning metric
        assert {m for s, m in gated if s == task} >= {"bleu", "bleu4", "cider", "meteor", "rouge_l",
                                                      "bertscore_precision", "bertscore_recall", "bertscore_f1"}
    table, _ = compare_runs(pytester.path / "r1", pytester.path / "results")
    assert {(p.split("/", 1)[1], m) for p, m in zip(table.protocol, table.metric)} == gated
    # the CLI prints the same rows
    printed = json.loads(_stdout_of(["compare", str(pytester.path / "r1"), str(pytester.path / "results"), "--json"]))
    assert {(r["protocol"].split("/", 1)[1], r["metric"]) for r in printed["rows"]} == gated
