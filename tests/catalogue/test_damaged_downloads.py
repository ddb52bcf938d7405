"""A download cut short, a corrupt archive and a full data disk: ``musiceval data prepare`` exits 2
with one line naming the file and the fix, never a traceback, and leaves no partial file behind
(docs/hardening.md, "A damaged download is named, deleted and fetched again").
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile

from tests.catalogue.conftest import NSYNTH_URL, nsynth_archive
from tests.catalogue.mirror import hub_dataset, tone_bytes, url_file
from tests.small_disk import small_disk  # noqa: F401  (fixture)

NOTES = {"bass_synthetic_068-049-025": tone_bytes(110), "keyboard_electronic_001-021-127": tone_bytes(220),
         "guitar_acoustic_010-066-100": tone_bytes(330)}


def _prepare(name: str, root, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "musiceval", "data", "prepare", name, "--data-root", str(root),
                           "--no-progress", *extra], capture_output=True, text=True, timeout=300, env=dict(os.environ))


def _error_line(done: subprocess.CompletedProcess) -> str:
    """The one error line (stderr also carries the 'fetching ...' progress line before it)."""
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("musiceval: error:")]
    assert len(errors) == 1 and done.stderr.strip().splitlines()[-1] == errors[0], done.stderr[-2000:]
    return errors[0]


def test_a_truncated_release_archive_is_named_deleted_and_fetched_again(mirror):
    archive = nsynth_archive(NOTES)
    url_file(mirror["urls"], NSYNTH_URL, archive[: len(archive) // 2])
    downloads = mirror["data"] / "nsynth" / "downloads"
    done = _prepare("nsynth", mirror["data"])
    line = _error_line(done)
    assert done.returncode == 2
    assert line.startswith(f"musiceval: error: {downloads / 'nsynth-test.jsonwav.tar.gz'}: a damaged or partial archive (")
    assert line.endswith("); deleted: run `musiceval data prepare nsynth` to download it again")
    assert "Compressed file ended before the end-of-stream marker was reached" in line
    assert list(downloads.iterdir()) == []  # the partial file is gone
    assert not list((mirror["data"] / "nsynth").rglob("*.part"))  # no half-extracted clip either
    url_file(mirror["urls"], NSYNTH_URL, archive)  # the mirror now holds the whole file
    again = _prepare("nsynth", mirror["data"])
    assert again.returncode == 0, again.stderr[-2000:]
    assert "nsynth: 3 of 4,096 items with audio" in again.stdout


def _musicqa_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for k in range(3):
            zf.writestr(f"audios/c{k}.wav", tone_bytes(200 + 50 * k))
    return buf.getvalue()


def _musicqa_eval() -> bytes:
    return json.dumps([{"audio_name": f"c{k}.wav", "conversation": [{"from": "human", "value": f"What plays in {k}?"},
                                                                      {"from": "gpt", "value": "a calm piano"}]}
                       for k in range(3)]).encode()


def test_a_zip_cut_short_in_the_hub_cache_is_deleted_with_its_blob_and_never_prepared_silently(mirror):
    whole = _musicqa_zip()
    commit = hub_dataset(mirror["hub"], "mu-llama/MusicQA", {"EvalMusicQA.json": _musicqa_eval(), "audios.zip": whole[:-40]})
    snapshot = mirror["hub"] / "datasets--mu-llama--MusicQA" / "snapshots" / commit
    blob = (snapshot / "audios.zip").resolve()
    done = _prepare("musicqa", mirror["data"])
    line = _error_line(done)
    assert done.returncode == 2
    assert line == (f"musiceval: error: {snapshot / 'audios.zip'}: a damaged or partial archive (BadZipFile: no zip "
                    "directory at its end (cut short, or not a zip file)); deleted from the Hugging Face cache: run "
                    "`musiceval data prepare musicqa` to download it again")
    assert not (snapshot / "audios.zip").is_symlink() and not blob.exists()
    # offline, the snapshot now lacks the archive: said, never a prepare with every clip missing
    offline = _prepare("musicqa", mirror["data"])
    assert offline.returncode == 2 and "audios.zip: not in the snapshot;" in _error_line(offline)
    hub_dataset(mirror["hub"], "mu-llama/MusicQA", {"EvalMusicQA.json": _musicqa_eval(), "audios.zip": whole}, commit=commit)
    again = _prepare("musicqa", mirror["data"])
    assert again.returncode == 0, again.stderr[-2000:]
    assert "musicqa: 3 of 5,040 items with audio" in again.stdout


def test_a_corrupt_member_of_a_release_archive_is_a_damaged_archive_too(mirror):
    archive = bytearray(nsynth_archive(NOTES))
    archive[len(archive) // 2] ^= 0xFF  # one flipped byte: a bad deflate stream or CRC
    url_file(mirror["urls"], NSYNTH_URL, bytes(archive))
    done = _prepare("nsynth", mirror["data"])
    assert done.returncode == 2 and ": a damaged or partial archive (" in _error_line(done)
    assert list((mirror["data"] / "nsynth" / "downloads").iterdir()) == []


def test_a_full_data_disk_names_the_file_and_the_fix_in_one_line(mirror, small_disk):
    url_file(mirror["urls"], NSYNTH_URL, nsynth_archive(NOTES))
    for size in ("16k", "48k", "72k"):  # the download, the questions, the clips: each on a full disk
        disk = small_disk(size, name=f"data-{size}")
        done = _prepare("nsynth", disk)
        line = _error_line(done)
        assert done.returncode == 2
        assert line.startswith(f"musiceval: error: cannot write {disk / 'nsynth'}/"), line
        assert line.endswith(": No space left on device; free space or pass --data-root DIR (or $MUSICEVAL_DATA) on a "
                             "writable disk; a rerun resumes"), line
        assert not [p for p in disk.rglob("*") if p.name.endswith((".tmp", ".part")) and "downloads" not in p.parts]
