"""A protocol from outside the package, built exactly as docs/extending.md ("A protocol") says, reaches
everything a built-in reaches: the page's module, installed under the page's entry points in a
temporary folder, the page's ``musiceval.toml`` and the page's commands, and nothing else, get the
suite config section and answers options, ``musiceval score tempo``, every release gate of ``pytest
evals/`` ("the model listens" through the answer permutation), the report's per-sample drill-down,
regression against the previous release and the provenance. Each step runs in a subprocess, as a
team's CI would (the registries load entry points once per process).

The messages met on the way name the input and the fix (docs/hardening.md, "No traceback: one line
naming the input and the fix"): a file no line of which could be read, ``--format`` of a plugin
protocol, a protocol no answer format feeds, one that reads no answer file, a headline that is a
finding, and two runs scored differently."""
from __future__ import annotations

import json
import lzma
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CLASSES = ("slow", "moderate", "fast")
HARNESS = ["-p", "no:cacheprovider", "-p", "no:randomly", "-q"]  # quiet and in the page's order; no step of its own


def _section() -> str:
    """docs/extending.md's protocol section, as a user reads it."""
    return (REPO / "docs" / "extending.md").read_text(encoding="utf-8").split("## A protocol", 1)[1]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", _section(), re.S)


def _page_module() -> str:
    return _blocks("python")[0]


def _page_toml(marker: str) -> str:
    """The page's TOML block that holds ``marker`` (its entry points, its musiceval.toml, its baseline)."""
    return next(b for b in _blocks("toml") if marker in b)


def _page_commands() -> list[list[str]]:
    """The page's shell commands, in order, each run with this interpreter (``python -m program``)."""
    lines = [ln.split("#", 1)[0].strip() for ln in _blocks("sh")[0].splitlines()]
    return [["-m", *shlex.split(ln)] for ln in lines if ln]


def _page_command(start: str) -> list[str]:
    return next(c for c in _page_commands() if " ".join(c[1:]).startswith(start))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A folder on the path holding the page's module and a dist-info with the page's entry points."""
    folder = tmp_path_factory.mktemp("site")
    (folder / "tempo_plugin.py").write_text(_page_module(), encoding="utf-8")
    _install(folder, "tempo-plugin", tomllib.loads(_page_toml("[project.entry-points"))["project"]["entry-points"])
    return folder


def _install(folder: Path, name: str, entry_points: dict[str, dict[str, str]]) -> None:
    info = folder / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()) + "\n"
        for group, points in entry_points.items()), encoding="utf-8")


def _env(*folders: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MUSICEVAL_"))}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, folders), str(REPO)])
    return env


@pytest.fixture(scope="module")
def plugin(site) -> dict[str, str]:
    """The environment of a process that has the page's plugin installed."""
    return _env(site)


def _answers(path: Path, *, accuracy: float, seed: int, n: int = 90, constant: str | None = None,
             noise: bool = False, torn: bool = False) -> Path:
    """``n`` tempo items on ``n // 3`` tracks; Correct answers right with probability ``accuracy``
    (or always ``constant``); with ``noise`` a white-noise control answered at random, with ``torn``
    two unreadable lines."""
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        truth = CLASSES[k % 3]
        right = rng.random() < accuracy
        said = constant or (truth if right else rng.choice([c for c in CLASSES if c != truth]))
        rows.append({"id": f"q{k:03d}", "track": f"t{k // 3}", "tempo": truth, "answer": f"It sounds {said} to me."})
        if noise:
            rows.append({"id": f"q{k:03d}", "track": f"t{k // 3}", "tempo": truth, "condition": "noise",
                         "answer": f"Maybe {rng.choice(CLASSES)}."})
    lines = [json.dumps(r) for r in rows] + (['{"id": "torn', "[1, 2]"] if torn else [])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _release(root: Path, env: dict[str, str], *, previous: Path | None = None, **answers) -> Path:
    """A team's repository as the page sets it up: the page's musiceval.toml (for the next release
    with the page's [baseline] lines, the previous release's results copied to where they point), the
    answers where the config names them, and the page's ``musiceval init``."""
    root.mkdir()
    config = _page_toml("# musiceval.toml\n") + ("\n" + _page_toml("[baseline]") if previous else "")
    (root / "musiceval.toml").write_text(config, encoding="utf-8")
    parsed = tomllib.loads(config)
    _answers(root / parsed["model"][0]["answers"][0]["file"], **answers)
    if previous:
        shutil.copytree(previous, root / parsed["baseline"]["results"])
    init = _run(_page_command("musiceval init"), env, root)
    assert init.returncode == 0 and (root / "evals" / "test_musiceval.py").is_file(), init.stderr
    return root


def _gates(repo: Path, env: dict[str, str], *, as_documented: bool = False) -> tuple[subprocess.CompletedProcess, dict, Path]:
    """The page's ``pytest evals/ -n 4 ...`` (``as_documented``; else in one process, the same gates
    faster on a 2-core machine): its output, results.json and results directory."""
    command = _page_command("pytest")
    if not as_documented:
        k = command.index("-n")
        command = [*command[:k], "-n", "0", *command[k + 2:]]
    out = _run([*command, *HARNESS], env, repo)
    results = repo / command[command.index("--musiceval-results-dir") + 1]
    return out, json.loads((results / "results.json").read_text(encoding="utf-8")), results


def _outcomes(results: dict, check: str) -> dict[str, str]:
    return {g["name"]: g["outcome"] for g in results["gates"]
            if g.get("protocol") == "tempo" and str(g.get("check", "")).startswith(f"tempo/{check}/")}


def test_the_suite_config_reads_the_plugin_section_and_answers_options(plugin, tmp_path):
    repo = _release(tmp_path / "repo", plugin, accuracy=0.8, seed=1)
    script = """
import json
from musiceval.suite.config import load_config
from musiceval.suite.runs import build_protocol, protocol_options
from musiceval.suite.schema import ConfigError
from musiceval.provenance import fingerprint
cfg = load_config(None, '.')
src = cfg.sources('tempo')[0]
fp = fingerprint(protocols=['tempo'], seed=0)
page = open('musiceval.toml').read()
open('strict.toml', 'w').write(page.replace('strict = false', 'strict = true', 1))
strict = load_config('strict.toml', '.')
errors = []
for text in ('[tempo]\\nmin_parse_rat = 0.5\\n',
             '[[model]]\\nname = "m"\\n[[model.answers]]\\nprotocol = "tempo"\\nfile = "runs/tempo.jsonl"\\nstrict = "yes"\\n'):
    open('bad.toml', 'w').write(text)
    try:
        load_config('bad.toml', '.')
    except ConfigError as exc:
        errors.append(str(exc))
print(json.dumps({"section": cfg.thresholds['tempo'], "entry": src.options, "options": protocol_options(src, cfg),
                  "strict_parse_rate": build_protocol(strict.sources('tempo')[0], strict).evaluate()['parse_rate'],
                  "errors": errors, "versions": fp['scorer']['protocols']['tempo']['versions']}))
"""
    out = _run(["-c", script], plugin, repo)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["section"]["min_parse_rate"] == 0.8 and got["section"]["regression_margin"] == 0.02  # the defaults
    assert got["section"]["strict"] is False and got["entry"] == {}
    assert got["options"] == {"strict": False}  # [tempo] strict reaches from_answers: options_from_config
    assert got["strict_parse_rate"] == 0.0  # [tempo] strict = true: no answer is a bare class word
    assert "min_parse_rat" in got["errors"][0] and "min_parse_rate" in got["errors"][0]
    assert "strict" in got["errors"][1] and "bool" in got["errors"][1]
    assert got["versions"] == {"tempo_parser": "1"}


def test_musiceval_score_scores_the_plugin_protocol_with_its_options(plugin, tmp_path):
    answers = _answers(tmp_path / "tempo.jsonl", accuracy=0.8, seed=1, noise=True, torn=True)
    help_text = _run(["-m", "musiceval", "score", "--help"], plugin, tmp_path)
    assert "tempo" in help_text.stdout
    out = _run(["-m", "musiceval", "score", "tempo", str(answers), "--json"], plugin, tmp_path)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    rows = [json.loads(ln) for ln in answers.read_text().splitlines()[:-2]]
    correct = [r for r in rows if r.get("condition", "correct") == "correct"]
    expected = sum(r["tempo"] in r["answer"] for r in correct) / len(correct)
    assert got["protocol"] == "tempo" and got["n"] == 90 and got["format"] == "tempo-jsonl"
    assert got["metrics"]["accuracy"] == pytest.approx(expected) and got["metrics"]["parse_rate"] == 1.0
    noise = [r for r in rows if r.get("condition") == "noise"]  # a control: beside Correct, as for every protocol
    assert noise and got["conditions"]["noise"]["accuracy"] == pytest.approx(
        sum(r["tempo"] in r["answer"] for r in noise) / len(noise))
    assert [c["name"] for c in got["chances"]["accuracy"]] == ["uniform chance 1/3", "best constant answer 'slow'"]
    assert got["n_failed"] == 2  # the torn line and the array: counted, named by line
    strict = _run(["-m", "musiceval", "score", "tempo", str(answers), "--strict", "true", "--json"], plugin, tmp_path)
    assert json.loads(strict.stdout)["metrics"]["parse_rate"] == 0.0  # no answer is a bare class word
    bad = _run(["-m", "musiceval", "score", "tempo", str(answers), "--strict", "maybe"], plugin, tmp_path)
    assert bad.returncode == 2 and "--strict" in bad.stderr


def test_the_release_gates_report_regression_and_provenance_reach_the_plugin_protocol(plugin, tmp_path):
    from musiceval.report.sample_data import decode

    good = _release(tmp_path / "v1", plugin, accuracy=0.85, seed=2)
    scored = _run(_page_command("musiceval score"), plugin, good)  # as the page shows it
    assert scored.returncode == 0 and json.loads(scored.stdout)["metrics"]["parse_rate"] == 1.0, scored.stderr
    out, results, results_dir = _gates(good, plugin, as_documented=True)
    assert out.returncode == 0 and results["verdict"] == "PASSED", out.stdout[-3000:]
    assert "musiceval: PASSED" in out.stdout.strip().splitlines()[-1]
    for check in ("beats_chance", "listens", "parse_rate", "readable"):
        assert list(_outcomes(results, check).values()) == ["PASS"], (check, results["gates"])
    listens = next(iter(_outcomes(results, "listens")))  # no control recorded: the answer permutation
    assert "beats the same answers moved to other items (answer permutation" in listens
    chance = next(g for g in results["gates"] if g.get("check", "").startswith("tempo/beats_chance/"))
    assert "uniform chance 1/3: " in chance["detail"] and "best constant answer 'slow': " in chance["detail"]
    assert results["meta"]["provenance"]["scorer"]["protocols"]["tempo"]["versions"] == {"tempo_parser": "1"}
    with lzma.open(results_dir / "samples.jsonl.xz", "rt", encoding="utf-8") as fh:
        samples = [json.loads(ln) for ln in fh]
    assert len(samples) == 90 and samples[0]["answer"].startswith("It sounds ") and samples[0]["reference"] in CLASSES
    drill_down = decode((results_dir / "report.html").read_text(encoding="utf-8"))["tempo"]
    assert {r["item"] for r in drill_down} == {s["item_id"] for s in samples}

    lazy = _release(tmp_path / "lazy", plugin, accuracy=0.0, seed=2, constant="slow")
    out, results, _ = _gates(lazy, plugin)
    assert out.returncode == 1 and results["verdict"] == "FAILED"
    chance = next(g for g in results["gates"] if g.get("check", "").startswith("tempo/beats_chance/"))
    assert chance["outcome"] == "FAIL" and "beats the strongest answer-blind strategy (" in chance["name"]
    assert "best constant answer 'slow': " in chance["detail"] and "not beaten" in chance["detail"]

    worse = _release(tmp_path / "v2", plugin, previous=results_dir, accuracy=0.45, seed=3)
    out, results, _ = _gates(worse, plugin)
    regression = {g["metric"]: g["outcome"] for g in results["gates"]
                  if str(g.get("check", "")).startswith("tempo/regression/")}
    assert regression == {"accuracy": "FAIL", "parse_rate": "PASS"}, regression  # 0.85 -> 0.45; 1.0 both
    assert out.returncode == 1 and results["verdict"] == "FAILED"


# ------------------------------------------------------------------ the messages met on the way

def test_a_file_no_line_of_which_can_be_read_is_one_line_naming_it(plugin, tmp_path):
    """(a) Every line unreadable: one line naming the file, that no line could be read and the first
    reason, from ``musiceval score`` (exit 2) and at the start of ``pytest evals/`` (refused, no
    traceback), not a KeyError from the protocol about a condition with no answers."""
    repo = _release(tmp_path / "repo", plugin, accuracy=0.8, seed=1)
    answers = repo / "runs" / "tempo.jsonl"
    answers.write_text('{"id": "q1", "tempo": "medium", "answer": "slow"}\n{"id": "q2"}\n', encoding="utf-8")
    want = ("tempo.jsonl: no line could be read (2 unreadable; first: tempo.jsonl:1: item 'q1': tempo must be one "
            "of slow, moderate, fast")
    score = _run(["-m", "musiceval", "score", "tempo", str(answers)], plugin, repo)
    assert score.returncode == 2 and want in score.stderr and "Traceback" not in score.stderr, score.stderr
    assert len(score.stderr.strip().splitlines()) == 1
    gates = _run([*_page_command("pytest"), *HARNESS], plugin, repo)
    text = gates.stdout + gates.stderr
    assert gates.returncode == 2 and want in text and "Traceback" not in text and "KeyError" not in text, text[-3000:]


def test_format_offers_only_the_formats_that_feed_the_plugin_protocol(plugin, tmp_path):
    """(b) ``--format`` of a plugin protocol lists its own formats, never a builtin short name."""
    answers = _answers(tmp_path / "tempo.jsonl", accuracy=0.8, seed=1)
    usage = _run(["-m", "musiceval", "score", "tempo", "--help"], plugin, tmp_path).stdout
    assert "--format {tempo-jsonl}" in usage and "musiceval" not in usage.split("--format", 1)[1].split("}", 1)[0]
    out = _run(["-m", "musiceval", "score", "tempo", str(answers), "--format", "musiceval"], plugin, tmp_path)
    assert out.returncode == 2 and "invalid choice: 'musiceval' (choose from 'tempo-jsonl')" in out.stderr
    assert "muchomusic" not in out.stderr


MISFITS = '''"""Protocols that miss a declaration: none of their answer formats, no answer file, a finding headline."""
from dataclasses import replace

from musiceval.data.formats import register_format
from musiceval.protocols import register_protocol
from tempo_plugin import TempoProtocol, load_tempo


@register_protocol
class PaceProtocol(TempoProtocol):
    name = "pace"


@register_protocol
class BpmProtocol(TempoProtocol):
    name = "bpm"
    answer_file = ""


@register_protocol
class HunchProtocol(TempoProtocol):
    name = "hunch"

    def metric_info(self, metric):
        return replace(super().metric_info(metric), role="finding")


register_format("hunch-jsonl", protocols=("hunch",), detect=lambda path, records: False)(load_tempo)
'''


@pytest.fixture(scope="module")
def misfits(site, tmp_path_factory) -> dict[str, str]:
    """The page's plugin and a second package whose protocols each miss one declaration."""
    folder = tmp_path_factory.mktemp("misfits")
    (folder / "misfits_plugin.py").write_text(MISFITS, encoding="utf-8")
    _install(folder, "misfits", {"musiceval.protocols": {"misfits": "misfits_plugin"},
                                 "musiceval.formats": {"misfits": "misfits_plugin"}})
    return _env(site, folder)


def test_a_protocol_no_answer_format_feeds_says_how_to_register_one(misfits, tmp_path):
    """(c) No format feeds the protocol: the message says so and names the registration, never an
    empty list of formats."""
    answers = _answers(tmp_path / "tempo.jsonl", accuracy=0.8, seed=1)
    want = ("no answer format is registered for the 'pace' protocol; register one with @register_format(NAME, "
            "protocols=('pace',), detect=...) and expose its module under the musiceval.formats entry point")
    out = _run(["-m", "musiceval", "score", "pace", str(answers)], misfits, tmp_path)
    assert out.returncode == 2 and want in out.stderr and "formats  (" not in out.stderr, out.stderr
    flag = _run(["-m", "musiceval", "score", "pace", str(answers), "--format", "tempo-jsonl"], misfits, tmp_path)
    assert flag.returncode == 2 and "argument --format: " + want in flag.stderr, flag.stderr


def test_a_protocol_without_an_answer_file_is_named_with_the_fix(misfits, tmp_path):
    """(d) ``musiceval score`` and an answers entry of a protocol that sets no ``answer_file``: it
    reads no answer file, and a protocol that does sets ``answer_file``; never "invalid choice"."""
    answers = _answers(tmp_path / "tempo.jsonl", accuracy=0.8, seed=1)
    want = ("the 'bpm' protocol reads no answer file (BpmProtocol sets no answer_file): a protocol that scores answer "
            "files sets its class attribute answer_file")
    out = _run(["-m", "musiceval", "score", "bpm", str(answers)], misfits, tmp_path)
    assert out.returncode == 2 and want in out.stderr and "invalid choice" not in out.stderr, out.stderr
    (tmp_path / "musiceval.toml").write_text(
        f'[[model]]\nname = "m"\n[[model.answers]]\nprotocol = "bpm"\nfile = "{answers.name}"\n', encoding="utf-8")
    config = _run(["-c", "from musiceval.suite.config import load_config; load_config(None, '.')"], misfits, tmp_path)
    assert config.returncode == 1 and want in config.stderr, config.stderr


def test_a_headline_that_is_a_finding_is_refused_naming_the_class(misfits, tmp_path):
    """A protocol whose headline metric has role="finding": ``pytest evals/`` refuses it in one line
    naming the class and the fix, instead of gating the model on it as "the model listens"."""
    repo = tmp_path / "repo"
    answers = _answers(repo / "hunch.jsonl", accuracy=0.8, seed=1)
    (repo / "evals").mkdir()
    (repo / "evals" / "test_musiceval.py").write_text("from musiceval.evals.release_gates import *  # noqa\n",
                                                      encoding="utf-8")
    (repo / "musiceval.toml").write_text(f'[[model]]\nname = "m"\n[[model.answers]]\nprotocol = "hunch"\nfile = '
                                         f'"{answers.name}"\nformat = "hunch-jsonl"\n', encoding="utf-8")
    out = _run(["-m", "pytest", "evals/", "-n", "0", *HARNESS], misfits, repo)
    want = ("HunchProtocol (protocol 'hunch'): its headline 'accuracy' has role='finding' in metric_info, but the "
            "headline is what the release gates 'the model listens' and 'the model answers the question' test; make "
            "a metric with role='gate' the headline, or give 'accuracy' role='gate'")
    assert out.returncode == 1 and want in out.stdout and "Traceback" not in out.stdout, out.stdout[-3000:]
    assert "musiceval: ERROR" in out.stdout.strip().splitlines()[-1]


def test_runs_scored_differently_name_the_key_and_both_values_on_the_first_line():
    """(e) The refusal's first line (the summary a verdict and a report show) names the differing
    key with both values, never a line ending in ":"."""
    from musiceval.results.comparison import NotComparable

    one = NotComparable("baseline v1", "ours", ["scorer.protocols.tempo.versions.tempo_parser: 1 (A) != 2 (B)"])
    assert str(one) == ("baseline v1 and ours were scored differently (scorer.protocols.tempo.versions.tempo_parser: "
                        "1 (A) != 2 (B)), so their scores do not compare; re-score one run with the other's scorer, "
                        "or compare runs of one musiceval setup")
    two = NotComparable("a", "b", ["scorer.seed: 0 (A) != 1 (B)", "scorer.data.x: 1a2b (A) != 3c4d (B)"])
    first, *rest = str(two).splitlines()
    assert "(scorer.seed: 0 (A) != 1 (B); 1 more below)" in first and not first.endswith(":")
    assert rest == ["  scorer.data.x: 1a2b (A) != 3c4d (B)"]
