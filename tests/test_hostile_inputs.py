"""The hostile-input matrix (docs/hardening.md): every command that reads user files x >= 30 input classes.

Each case runs ``musiceval.cli.main`` in-process on a thread with a deadline and asserts:

- no traceback: the exit status is 0, 1 (a command's "some items failed") or 2 (unusable input,
  one line on stderr), never an uncaught exception;
- no hang: the command returns within :data:`DEADLINE_S` (a FIFO with no writer must be refused,
  not opened);
- no silent drop: where the command prints JSON with counts, every record of the input is a
  scored item or a counted failure (``n + n_failed`` == records; ``generate``: responses + failures;
  ``mir-live``: answered + failed).

Inputs are tiny (the whole matrix runs in well under a minute on one core). A case that hangs
leaves its daemon thread blocked (and, since ``redirect_stdout`` is process-wide, later output of
this process captured); the case itself fails with "hang". Cases that cannot
apply are skipped with the reason (``unreadable`` as root: root reads a chmod-000 file anyway).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import threading
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import soundfile as sf

from tests.hostile_inputs import CSV_CLASSES, FILE_KINDS, JSONL_CLASSES, make_csv, make_jsonl

DEADLINE_S = float(os.environ.get("MUSICEVAL_HOSTILE_DEADLINE_S", "30"))
ALLOWED_EXIT = {0, 1, 2}


# -- test doubles registered through the real registries -------------------------------------------
class _EchoModel:
    """A Music LM that answers 'blues' to everything (registered as ``hostile-echo:``)."""

    revision, sample_rate, chunk_seconds, max_audio_seconds, needs_audio = "v1", 16000, None, None, True

    def __init__(self, rest: str, **_: Any) -> None:
        self.spec = f"hostile-echo:{rest}"

    def generate(self, requests, settings):
        from musiceval.models import Answer

        return [Answer(text="blues") for _ in requests]

    def close(self) -> None:
        pass


class _HashEncoder:
    id = "hostile:hash"

    def encode(self, texts):
        rows = []
        for t in texts:
            rng = np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest()[:8], "little"))
            v = rng.normal(size=8).astype(np.float32)
            rows.append(v / np.linalg.norm(v))
        return np.stack(rows) if rows else np.zeros((0, 8), np.float32)


@pytest.fixture(scope="module", autouse=True)
def _register_doubles():
    from musiceval.encoders.base import ENCODERS, register_encoder
    from musiceval.models.base import MODELS, register_model

    register_encoder("hostile")(lambda arg: _HashEncoder())
    register_model("hostile-echo")(_EchoModel)
    yield
    ENCODERS.unregister("hostile")
    MODELS.unregister("hostile-echo")


# -- the commands ------------------------------------------------------------------------------------
@dataclass
class Case:
    argv: list[str]
    n_records: int | None
    counts: Callable[[list[dict]], int] | None  # records accounted for, from the JSON printed


def _score_counts(objs: list[dict]) -> int:
    """Scored, failed, and left out of every condition by a named rule."""
    from musiceval.exclusions import left_out_of_every_condition

    obj = objs[-1]
    return int(obj["n"]) + int(obj["n_failed"]) + left_out_of_every_condition(obj.get("excluded", {}))


CHOICE = {"audio": "a.wav", "question": "Which genre?", "choices": ["Reggae", "Pop", "Rock", "Ska"], "answer": "A",
          "prompt": "Which genre?\n(A) Reggae\n(B) Pop\n(C) Rock\n(D) Ska", "model_output": "A", "model_name": "M"}
FACTUAL = {"dataset_name": "NSynth", "audio": "a.wav", "label": ["bass"], "prompt": "What's the music instrument?",
           "model_output": "bass", "model_name": "M"}
FREEFORM = {"question": "Describe the audio", "answer": "a calm piano piece with strings", "audio": "a.wav",
            "prompt": "Describe the audio", "model_output": "a calm piano piece", "model_name": "M"}
MIR = {"question": "Identify the genre", "response": "blues", "correct_answer": "blues", "audioid": "a.wav"}
MANIFEST = {"id": "x", "question": "What genre is this?", "audio": "a.wav"}
INSTRUCTION = {"instruction": "Identify the genre of the given music.", "input": "<|SOA|><AUDIO><|EOA|>",
               "output": "blues", "split": ["test"], "audio_path": ["a.wav"], "audio_start": 0.0, "audio_end": 1.0}
TRIPLET_HEADER = ["anchor", "positive", "negative"]
GENRES = ["Rock music", "Jazz", "Blues", "Techno", "Ambient music", "Funk", "Salsa music", "Opera"]


def _triplet_row(k: int) -> list[str]:
    return [GENRES[k % 8], GENRES[(k + 1) % 8], GENRES[(k + 4) % 8]]


def _audio(folder: Path) -> None:
    sf.write(folder / "a.wav", np.zeros(1600, np.float32), 16000)


def build(command: str, klass: str, tmp: Path) -> Case:
    data = tmp / "data"
    data.mkdir(parents=True)
    _audio(data)
    if command in ("choice", "factual", "freeform"):
        template, text_field, path_field = {"choice": (CHOICE, "question", "audio"), "factual": (FACTUAL, "prompt", "audio"),
                                            "freeform": (FREEFORM, "question", "audio")}[command]
        path, n = make_jsonl(klass, data / "in.jsonl", template, id_field=None, text_field=text_field, path_field=path_field)
        extra = {"freeform": ["--metrics", "bleu,rouge_l", "--conditions", "correct"],
                 "factual": ["--vocab", "nsynth"]}.get(command, [])
        return Case(["score", command, str(path), "--format", "dasheng", "--json", *extra], n, _score_counts)
    if command == "mir":
        path, n = make_jsonl(klass, data / "m_GTZAN.jsonl", MIR, id_field=None, text_field="question", path_field="audioid")
        # mir's n counts every record of the file (n_failed is the subset not scored)
        return Case(["score", "mir", str(path), "--json"], n, lambda objs: int(objs[-1]["n"]))
    if command == "triplets":
        path, n = make_csv(klass, data / "t.csv", TRIPLET_HEADER, _triplet_row)
        return Case(["score", "triplets", str(path), "--encoder", "hostile", "--json"], n, _score_counts)
    if command == "generate":
        path, n = make_jsonl(klass, data / "manifest.jsonl", MANIFEST, text_field="question", path_field="audio")
        return Case(["generate", "--model", "hostile-echo:x", "--dataset", str(path), "--data-dir", str(data),
                     "--conditions", "correct", "--cache-dir", str(tmp / "cache"), "--no-progress"], n,
                    lambda objs: int(objs[-1]["n_responses"]) + int(objs[-1]["n_failed"]))
    if command == "mir-live":
        path, n = make_jsonl(klass, data / "CMI_GTZAN.jsonl", INSTRUCTION, id_field=None, text_field="instruction",
                             path_field="audio_path")
        return Case(["mir-live", "--model", "hostile-echo:x", "--instructions", str(data), "--tasks", "GTZAN",
                     "--split", "all", "--cache-dir", str(tmp / "cache")], n,
                    lambda objs: int(objs[-1]["n_answered"]) + int(objs[-1]["n_failed"]))
    if command == "rewrite":
        path, n = make_jsonl(klass, data / "in.jsonl", FREEFORM, id_field=None, text_field="question", path_field="audio")
        return Case(["rewrite", str(path), "--format", "dasheng", "--model", "m", "--out", str(tmp / "rw.jsonl"),
                     "--replay"], None, None)
    if command == "report":
        _results_dir(tmp / "run", klass)
        return Case(["report", str(tmp / "run")], None, None)
    raise KeyError(command)


def _results_dir(run: Path, klass: str, target: str = "results.json") -> Path:
    """A real results directory (written by the report writer) with ``target`` replaced by the hostile input."""
    from musiceval.report import write_run

    parts = run / "parts"
    parts.mkdir(parents=True)
    rows = [{"type": "scores", "gate": "g1", "protocol": "choice", "metric": "acc", "condition": "correct",
             "ids": ["a", "b"], "values": [1.0, 0.0], "groups": None, "failures": [{"item_id": "c", "reason": "x"}]},
            {"type": "gate", "name": "g1", "outcome": "PASS", "estimate": 0.2, "ci": [0.1, 0.3], "p_value": 0.01,
             "n": 2, "threshold": 0.25, "test": "exact binomial", "protocol": "choice", "alpha": 0.05}]
    (parts / "main.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_run(run, {"seed": 0})
    template = json.loads((run / "results.json").read_text()) if target == "results.json" else rows[0]
    # a hostile scores.jsonl replaces the run's scores.jsonl.xz (read as an uncompressed older run's)
    (run / ("scores.jsonl.xz" if target == "scores.jsonl" else target)).unlink()
    dest = run / target
    keep_one = klass in ("valid", "bom", "crlf", "extra_fields", "number_as_id", "symlink_out") or klass in FILE_KINDS
    text_field = next((k for k, v in template.items() if isinstance(v, str)), next(iter(template)))
    make_jsonl(klass, dest, template, id_field=None, text_field=text_field,
               n=3 if target != "results.json" else (1 if keep_one else 0))
    return run


# -- the harness -------------------------------------------------------------------------------------
def run_cli(argv: list[str]) -> tuple[int | None, str, str, BaseException | None]:
    """``main(argv)`` on a daemon thread; ``(exit code or None on a hang, stdout, stderr, exception)``."""
    from musiceval.cli import main

    out, err, box = io.StringIO(), io.StringIO(), {}

    def target():
        try:
            with redirect_stdout(out), redirect_stderr(err):
                box["code"] = main(argv)
        except SystemExit as exc:  # argparse usage errors
            box["code"] = exc.code if isinstance(exc.code, int) else 2
        except BaseException as exc:  # noqa: BLE001 - the assertion below reports it
            box["exc"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    if thread.is_alive():
        return None, out.getvalue(), err.getvalue(), None
    return box.get("code"), out.getvalue(), err.getvalue(), box.get("exc")


def _json_objects(stdout: str) -> list[dict]:
    objs = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                objs.append(json.loads(line))
            except ValueError:
                pass
    return objs


COMMANDS = ("choice", "factual", "freeform", "mir", "triplets", "generate", "mir-live", "rewrite", "report")
#: cases that fail because of code another engineer owns: (command, class) -> reason naming the owner
XFAIL: dict[tuple[str, str], str] = {}


def _params():
    for command in COMMANDS:
        classes = CSV_CLASSES if command == "triplets" else JSONL_CLASSES
        for klass in classes:
            marks = []
            if (command, klass) in XFAIL:
                marks.append(pytest.mark.xfail(strict=True, reason=XFAIL[(command, klass)]))
            yield pytest.param(command, klass, id=f"{command}-{klass}", marks=marks)


def _skip_if_root(klass: str) -> None:
    if klass == "unreadable" and hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("running as root: root reads a chmod-000 file anyway, so 'unreadable' cannot apply")


@pytest.mark.parametrize("command, klass", list(_params()))
def test_hostile_input(command, klass, tmp_path, monkeypatch):
    _skip_if_root(klass)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    case = build(command, klass, tmp_path)
    code, stdout, stderr, exc = run_cli(case.argv)
    assert code is not None, f"hang: {command} on {klass} did not return within {DEADLINE_S} s"
    assert exc is None, f"uncaught {type(exc).__name__}: {exc}"
    assert "Traceback" not in stderr
    assert code in ALLOWED_EXIT, (code, stderr[-2000:])
    if code == 2:
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        assert lines and "error" in lines[-1].lower(), stderr[-2000:]
    if command in PER_ITEM_COMMANDS and klass in PER_ITEM:
        assert code != 2, f"one bad record stopped the whole file: {stderr[-2000:]}"
    objs = _json_objects(stdout)
    if case.counts is not None and case.n_records is not None and objs and code != 2:
        assert case.counts(objs) == case.n_records, (objs[-1], stderr[-3000:])
    if klass in BENIGN:  # a BOM, CRLF, extra fields, a symlink: read exactly like the plain file
        ref = build(command, "valid", tmp_path / "reference")
        ref_code, ref_out, _, _ = run_cli(ref.argv)
        assert code == ref_code, stderr[-2000:]
        keys = ("n", "n_failed", "n_responses", "n_answered")
        assert [{k: o.get(k) for k in keys} for o in objs] == [{k: o.get(k) for k in keys} for o in _json_objects(ref_out)]


#: inputs that must be read exactly like the plain valid file
BENIGN = ("bom", "crlf", "extra_fields", "symlink_out")
#: one bad record among good ones: a counted per-item failure, never exit 2 for the whole file
PER_ITEM = ("non_utf8", "nul_bytes", "lone_surrogate", "lone_surrogate_in_text", "deep_nesting", "huge_int", "huge_line",
            "wrong_types", "nan_infinity", "missing_fields", "very_long_strings", "zero_width", "rtl_emoji",
            "path_traversal", "absolute_path", "truncated_json", "null_values", "trailing_garbage", "control_chars",
            "empty_strings", "nested_objects_as_values", "negative_numbers", "mixed_encodings", "duplicate_ids",
            "unterminated_quote", "missing_columns", "extra_columns", "empty_cells", "quoted_newlines")
PER_ITEM_COMMANDS = ("choice", "factual", "freeform", "mir", "triplets", "generate", "mir-live")


RESULTS_CLASSES = tuple(c for c in JSONL_CLASSES if c not in ("many_records",))


@pytest.mark.parametrize("target", ["results.json", "scores.jsonl"])
@pytest.mark.parametrize("klass", RESULTS_CLASSES)
def test_results_load_on_hostile_files(klass, target, tmp_path):
    from musiceval import results

    _skip_if_root(klass)
    run = _results_dir(tmp_path / "run", klass, target)
    box: dict[str, Any] = {}

    def target_fn():
        try:
            box["run"] = results.load(run)
        except BaseException as exc:  # noqa: BLE001 - checked below
            box["exc"] = exc

    thread = threading.Thread(target=target_fn, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    assert not thread.is_alive(), f"results.load hung on {klass} {target}"
    exc = box.get("exc")
    if exc is not None:
        assert isinstance(exc, (results.ResultsError, FileNotFoundError)), f"raw {type(exc).__name__}: {exc}"
        assert target in str(exc) or str(run) in str(exc), str(exc)


#: the other input layouts of the score commands: no traceback, no hang, exit 0/1/2
OTHER_FORMATS = (("choice", "musiceval", CHOICE, "question"), ("choice", "muchomusic", CHOICE, "question"),
                 ("factual", "musiceval", FACTUAL, "prompt"), ("factual", "cmi-bench", FACTUAL, "prompt"),
                 ("freeform", "musiceval", {"id": "x", "question": "q", "reference": "a calm piece", "response": "calm"},
                  "question"))


@pytest.mark.parametrize("klass", JSONL_CLASSES)
@pytest.mark.parametrize("command, fmt, template, text_field", OTHER_FORMATS, ids=[f"{c}-{f}" for c, f, _, _ in OTHER_FORMATS])
def test_hostile_input_other_formats(command, fmt, template, text_field, klass, tmp_path, monkeypatch):
    _skip_if_root(klass)
    monkeypatch.chdir(tmp_path)
    path, _ = make_jsonl(klass, tmp_path / "m_GTZAN.jsonl", template, text_field=text_field, path_field="audio")
    extra = {"factual": ["--vocab", "nsynth"], "freeform": ["--metrics", "bleu", "--conditions", "correct"]}.get(command, [])
    code, _, stderr, exc = run_cli(["score", command, str(path), "--format", fmt, "--json", *extra])
    assert code is not None, f"hang: {command} --format {fmt} on {klass}"
    assert exc is None, f"uncaught {type(exc).__name__}: {exc}"
    assert "Traceback" not in stderr and code in ALLOWED_EXIT, stderr[-2000:]


# -- side inputs: files a command reads beside its answers ------------------------------------
REPO = Path(__file__).resolve().parents[1]
GTZAN_ANSWERS = str(REPO / "fixtures" / "factual" / "ltu_GTZAN.jsonl")
#: side input -> (its valid record, the text field, the command reading it as ``path``); an unusable
#: side file must be blamed by name, never the answer file beside it
SIDE_INPUTS: dict[str, tuple[dict[str, Any], str, Callable[[Path], list[str]]]] = {
    "vocab": ({"name": "genres", "labels": ["rock", "pop"]}, "name",
              lambda p: ["score", "factual", GTZAN_ANSWERS, "--vocab", str(p), "--json"]),
    "ontology": ({"id": "/m/0kpv1t", "name": "Music genre", "child_ids": []}, "name",
                 lambda p: ["score", "triplets", "--triplets", "genre", "--ontology", str(p), "--json"]),
}


@pytest.mark.parametrize("klass", JSONL_CLASSES)
@pytest.mark.parametrize("side", sorted(SIDE_INPUTS))
def test_hostile_side_input_is_named_in_the_error(side, klass, tmp_path, monkeypatch):
    _skip_if_root(klass)
    monkeypatch.chdir(tmp_path)
    template, text_field, argv = SIDE_INPUTS[side]
    path, _ = make_jsonl(klass, tmp_path / f"{side}.json", template, id_field=None, text_field=text_field, n=1)
    code, _, stderr, exc = run_cli(argv(path))
    assert code is not None, f"hang: {side} {klass}"
    assert exc is None, f"uncaught {type(exc).__name__}: {exc}"
    assert "Traceback" not in stderr and code in ALLOWED_EXIT, stderr[-2000:]
    if code == 2:
        line = [ln for ln in stderr.splitlines() if ln.strip()][-1]
        assert str(path) in line and GTZAN_ANSWERS not in line, line


@pytest.mark.parametrize("klass", JSONL_CLASSES)
def test_hostile_suite_config_is_a_config_error(klass, tmp_path):
    """The same bytes as a ``musiceval.toml``: read, or refused with a ConfigError naming the file."""
    from musiceval.suite.config import load_config
    from musiceval.suite.schema import ConfigError

    _skip_if_root(klass)
    path, _ = make_jsonl(klass, tmp_path / "musiceval.toml", {"name": "m"}, id_field=None, text_field="name", n=1)
    try:
        load_config(path, tmp_path)
    except ConfigError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)


@pytest.mark.parametrize("damage", ["torn", "not_xz", "empty"])
def test_results_load_on_a_damaged_compressed_scores_file(damage, tmp_path):
    """A scores.jsonl.xz cut short, not xz at all, or empty, with and without the digest
    results.json recorded for it: a ResultsError naming the file, never a raw lzma error."""
    from musiceval import results

    run = _results_dir(tmp_path / "run", "valid")
    meta = json.loads((run / "results.json").read_text())
    meta["verdict"] = "PASSED"  # the class suffixes the first text field, the verdict, which is refused on its own
    (run / "results.json").write_text(json.dumps(meta))
    gz = run / "scores.jsonl.xz"
    data = gz.read_bytes()
    gz.write_bytes({"torn": data[: len(data) // 2], "not_xz": b"not xz at all\n", "empty": b""}[damage])
    with pytest.raises(results.ResultsError, match="scores.jsonl.xz"):
        results.load(run)
    meta = json.loads((run / "results.json").read_text())
    meta["artefacts"].pop("scores.jsonl.xz")  # no digest to compare: the xz reader itself must refuse it
    (run / "results.json").write_text(json.dumps(meta))
    with pytest.raises(results.ResultsError, match="scores.jsonl.xz: not a readable xz file"):
        results.load(run)
