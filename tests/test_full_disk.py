"""A full disk anywhere is one line and, in a session, the verdict ERROR; no file is left torn
(docs/hardening.md, "A full disk is one line, never a torn file").

Each case writes on a real small disk (a tmpfs of a few pages, :mod:`tests.small_disk`; skipped
where it cannot be mounted): a real session of a scratch project (``pytest evals -n 2`` on 60
MuChoMusic answers) with its results directory and JUnit file there, at sizes from one that fills
during the tests to one that passes, and with the disk filled just before the session writes its
artefacts; ``musiceval score --per-item``, ``musiceval generate``'s response cache.
"""
from __future__ import annotations

import json
import lzma
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.small_disk import fill, small_disk  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parents[1]
WORDS = ("NOTHING DECIDED", "INCONCLUSIVE", "PASSED", "FAILED", "ERROR")
ENOSPC_LINE = "No space left on device; free space or pass --"

CONFIG = '''[[model]]
name = "M"
[[model.answers]]
protocol = "choice"
file = "mc.jsonl"
[defaults]
min_coverage = 0.01
'''

#: fills the disk just before musiceval writes the session's artefacts (a conftest's tryfirst
#: sessionfinish runs before the plugin's), leaving $FILL_LEAVE bytes
FILL_AT_FINISH = '''
import os, pytest
from tests_small_disk import fill

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):
        fill(__import__("pathlib").Path(os.environ["FILL_DISK"]), int(os.environ["FILL_LEAVE"]))
'''


def _project(root: Path, conftest: str = "") -> Path:
    project = root / "project"
    (project / "evals").mkdir(parents=True)
    rows = (REPO / "fixtures" / "choice" / "dev_midashenglm.jsonl").read_text(encoding="utf-8").splitlines()[:60]
    (project / "mc.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (project / "musiceval.toml").write_text(CONFIG, encoding="utf-8")
    (project / "evals" / "test_musiceval.py").write_text((REPO / "evals" / "test_musiceval.py").read_text(encoding="utf-8"))
    if conftest:
        (project / "evals" / "conftest.py").write_text(conftest, encoding="utf-8")
        (project / "evals" / "tests_small_disk.py").write_text((REPO / "tests" / "small_disk.py").read_text(encoding="utf-8"))
    return project


def _session(project: Path, disk: Path, **env: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pytest", "evals", "-p", "no:cacheprovider", "-p", "no:randomly", "-n", "2",
               "--musiceval-results-dir", str(disk / "res"), "--junitxml", str(disk / "junit.xml")]
    return subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **env})


def _word(text: str) -> str:
    return next(w for w in WORDS if f"musiceval: {w}:" in text)


def _says_one_word(done: subprocess.CompletedProcess, disk: Path) -> str:
    """The session's word, after checking that every artefact present says it whole, that nothing
    is torn or left half-written, and that the exit code and the terminal's last line agree."""
    out = done.stdout + done.stderr
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    word = _word(last)
    assert last.startswith(f"musiceval: {word}:"), last
    assert done.returncode == (0 if word == "PASSED" else 1), (done.returncode, last)
    res = disk / "res"
    results = res / "results.json"
    if results.exists():
        run = json.loads(results.read_text(encoding="utf-8"))
        assert run["verdict"] == run["verdict_detail"]["word"] == word
        for name, digest in run.get("artefacts", {}).items():  # what results.json names is there, whole
            assert len((res / name).read_bytes()) == digest["bytes"]
    for name in ("report.md", "report.html"):
        if (res / name).exists():
            assert results.exists() and _word((res / name).read_text(encoding="utf-8")) == word
    for name in ("scores.jsonl.xz", "samples.jsonl.xz"):
        if (res / name).exists():
            lzma.decompress((res / name).read_bytes())
    for part in (res / "parts").glob("*.jsonl") if (res / "parts").is_dir() else ():
        for line in part.read_text(encoding="utf-8").splitlines():
            json.loads(line)  # a failed append was cut back: no torn row
    junit = disk / "junit.xml"
    if junit.exists():
        props = {p.get("name"): p.get("value") for p in ET.parse(junit).iter("property")}
        assert props.get("musiceval_verdict") == word
    for plot in (res / "plots").glob("*.svg") if (res / "plots").is_dir() else ():
        ET.parse(plot)  # drawn for a report that was written; none is left torn
    left = [str(p) for p in disk.rglob("*") if p.name.endswith((".tmp", ".partial", ".part"))]
    assert left == [], left
    if word == "ERROR":
        assert ENOSPC_LINE in last, last  # the cause, in the one line
    return word


@pytest.mark.slow  # a real session each (about 8 s on 2 cores)
@pytest.mark.parametrize("size", ["40k", "64k", "80k", "100k", "140k", "300k", "750k", "4m"])
def test_a_session_on_a_small_disk_says_error_in_one_line_and_leaves_nothing_torn(small_disk, tmp_path, size):
    disk = small_disk(size)
    done = _session(_project(tmp_path), disk)
    word = _says_one_word(done, disk)
    if size == "40k":  # full during the tests: their rows cannot be written
        assert word == "ERROR" and "/parts/" in done.stdout.strip().splitlines()[-1]
    if size == "4m":
        assert word == "PASSED" and (disk / "res" / "report.html").is_file() and (disk / "junit.xml").is_file()


@pytest.mark.slow  # a real session each (about 8 s on 2 cores)
@pytest.mark.parametrize("leave", [0, 12 * 1024, 40 * 1024, 64 * 1024])
def test_a_disk_that_fills_before_the_artefacts_are_written_is_an_error_never_a_torn_junit_file(small_disk, tmp_path, leave):
    disk = small_disk("1m")
    project = _project(tmp_path, conftest=FILL_AT_FINISH)
    done = _session(project, disk, FILL_DISK=str(disk), FILL_LEAVE=str(leave))
    assert _says_one_word(done, disk) == "ERROR"
    reasons = done.stdout
    assert ("writing the JUnit file failed: cannot write " in reasons or "writing the artefacts failed: cannot write " in reasons)
    plots = [p for p in disk.rglob("*") if p.is_file() and "plots" in p.parts]
    assert all(p.suffix == ".svg" and p.read_text(encoding="utf-8").rstrip().endswith("</svg>") for p in plots), plots


def test_a_plain_session_whose_junit_file_cannot_be_written_says_so_in_one_line(small_disk, tmp_path):
    disk = small_disk("16k")
    fill(disk)
    project = tmp_path / "plain"
    project.mkdir()
    (project / "test_x.py").write_text("def test_x():\n    assert True\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "test_x.py",
                           "--junitxml", str(disk / "junit.xml")], cwd=project, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in out and "INTERNALERROR" not in out, out[-2000:]
    assert f"no xml file: cannot write {disk / 'junit.xml'}: No space left on device; free space or pass --junitxml FILE" in out
    assert not (disk / "junit.xml").exists() and not list(disk.glob(".*.tmp"))


def test_an_append_that_fills_the_disk_is_cut_back_to_whole_lines(small_disk):
    from musiceval.writes import append_whole

    disk = small_disk("8k")
    path = disk / "rows.jsonl"
    append_whole(path, b'{"a": 1}\n')
    with pytest.raises(OSError):
        append_whole(path, b"x" * 64 * 1024)
    assert path.read_bytes() == b'{"a": 1}\n'


def test_the_response_cache_on_a_full_disk_names_its_file_and_keeps_whole_lines(small_disk):
    from musiceval.models.cache import ResponseCache
    from musiceval.writes import WriteError

    disk = small_disk("64k")
    cache = ResponseCache(disk / "responses")
    written = 0
    with pytest.raises(WriteError) as err:
        for k in range(100):
            written += cache.put_many([{"key": f"{k:064x}", "text": "a long answer " * 300}])
    assert str(err.value) == (f"cannot write {cache.path}: No space left on device; free space or pass --cache-dir DIR "
                              "(pytest: --musiceval-cache-dir DIR) on a writable disk")
    again = ResponseCache(disk / "responses")
    assert len(again) == written > 0 and again.torn == []


def _thirty_long_answers(tmp_path: Path) -> tuple[Path, Path]:
    """A 30-item manifest over one silent clip and a recorded model answering each with about 4.8 kB."""
    import numpy as np
    import soundfile as sf

    sf.write(tmp_path / "a.wav", np.zeros(160, np.float32), 16000)
    manifest, recorded = tmp_path / "m.jsonl", tmp_path / "rec.jsonl"
    manifest.write_text("".join(json.dumps({"id": f"x{i}", "question": "q", "audio": "a.wav"}) + "\n" for i in range(30)))
    recorded.write_text("".join(json.dumps({"item_id": f"x{i}", "prompt": "q", "text": "long answer " * 400}) + "\n"
                                for i in range(30)))
    return manifest, recorded


def test_generate_on_a_full_disk_is_one_line_naming_the_cache_exit_2(small_disk, tmp_path):
    manifest, recorded = _thirty_long_answers(tmp_path)
    disk = small_disk("200k")
    done = subprocess.run([sys.executable, "-m", "musiceval", "generate", "--model", f"recorded:{recorded}",
                           "--dataset", str(manifest), "--cache-dir", str(disk), "--conditions", "correct", "--no-progress"],
                          capture_output=True, text=True, timeout=300)
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert errors == [f"musiceval: error: cannot write {disk / 'responses' / 'responses.jsonl'}: No space left on device; "
                      "free space or pass --cache-dir DIR (pytest: --musiceval-cache-dir DIR) on a writable disk"]
    assert not list((disk / "responses" / "claims").iterdir())  # released: a rerun asks for them


def test_generate_out_on_a_full_disk_is_one_line_exit_2_and_the_old_file_stays(small_disk, tmp_path):
    manifest, recorded = _thirty_long_answers(tmp_path)
    disk = small_disk("64k")
    out = disk / "answers.jsonl"
    out.write_text('{"old": true}\n', encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "musiceval", "generate", "--model", f"recorded:{recorded}",
                           "--dataset", str(manifest), "--cache-dir", str(tmp_path / "cache"), "--conditions", "correct",
                           "--out", str(out), "--no-progress"], capture_output=True, text=True, timeout=300)
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert len(errors) == 1 and f"cannot write {out}: No space left on device" in errors[0], errors
    assert "rerun with a writable --out" in errors[0]
    assert out.read_text(encoding="utf-8") == '{"old": true}\n'  # whole or not at all
    assert not list(disk.glob(".*.tmp"))


def test_per_item_on_a_full_disk_is_one_line_exit_2_and_the_old_file_stays(small_disk):
    disk = small_disk("8k")
    per_item = disk / "per.jsonl"
    per_item.write_text('{"old": true}\n', encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "musiceval", "score", "choice",
                           str(REPO / "fixtures" / "choice" / "dev_midashenglm.jsonl"), "--per-item", str(per_item)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"musiceval: error: cannot write {per_item}: No space left on device; free space or pass --per-item FILE on a "
        "writable disk"]
    assert per_item.read_text(encoding="utf-8") == '{"old": true}\n' and sorted(p.name for p in disk.iterdir()) == ["per.jsonl"]


def test_a_results_dir_on_a_full_disk_stops_pytest_at_start_up_naming_the_lock_file(small_disk, tmp_path):
    disk = small_disk("8k")
    fill(disk)
    done = _session(_project(tmp_path), disk)
    out = done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in out and "INTERNALERROR" not in out, out[-2000:]
    assert (f"musiceval: cannot write {disk / 'res' / '.session.lock'}: No space left on device; free space or pass "
            "--musiceval-results-dir DIR on a writable disk") in out
    assert not (disk / "res" / ".session.lock").exists()


def test_an_embedding_cache_on_a_full_disk_warns_once_naming_the_fix_and_values_are_computed(small_disk):
    """The embedding cache is an accelerator: on a full disk it degrades to no cache with one warning
    that says to free space or move the cache (not to delete the file), and every value is still given."""
    import numpy as np

    from musiceval.encoders.embedding_cache import EmbeddingCache

    disk = small_disk("96k")
    cache = EmbeddingCache(disk)
    rows = [(f"text {k}", np.full(384, k, np.float32)) for k in range(200)]
    with pytest.warns(UserWarning) as caught:
        cache.put_many("enc", rows)
        cache.put_many("enc", rows)
    (warning,) = [str(w.message) for w in caught]
    assert "unusable" in warning and "disk is full" in warning
    assert "free space or pass --cache-dir DIR (pytest: --musiceval-cache-dir DIR) on a writable disk" in warning
    assert cache.get("enc", "text 3") is None  # a miss, computed by the caller: never a wrong value
