"""Fixtures: a local mirror (hub cache + release URLs) the catalogue reads offline."""
from __future__ import annotations

import io
import json
import tarfile

import pytest

from tests.catalogue.mirror import hub_dataset, tone_bytes, url_file

NSYNTH_URL = "http://download.magenta.tensorflow.org/datasets/nsynth/nsynth-test.jsonwav.tar.gz"


@pytest.fixture(scope="session")
def tiny_qwen(tmp_path_factory):
    """A tiny randomly initialised Qwen2-Audio checkpoint (:func:`musiceval.models.qwen2audio.build_tiny_checkpoint`),
    built once per test process for the ``musiceval run`` tests of the catalogue."""
    pytest.importorskip("transformers")
    from musiceval.models.qwen2audio import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-qwen2-audio"))


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """``{"hub": cache dir, "urls": mirror dir, "data": data root}`` with the environment pointing at them."""
    import huggingface_hub.constants as hf_constants

    hub, urls = tmp_path / "hub", tmp_path / "urls"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("MUSICEVAL_URL_MIRROR", str(urls))
    return {"hub": hub, "urls": urls, "data": tmp_path / "data"}


def nsynth_archive(notes: dict[str, bytes | None]) -> bytes:
    """``nsynth-test.jsonwav.tar.gz`` as released: ``nsynth-test/examples.json`` and
    ``nsynth-test/audio/<note>.wav`` (a note mapped to None has no wav in the archive)."""
    examples = {n: {"note_str": n, "instrument_family_str": n.split("_")[0], "pitch": int(n[-7:-4]), "sample_rate": 16000}
                for n in notes}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))

        add("nsynth-test/examples.json", json.dumps(examples).encode())
        for note, data in notes.items():
            if data is not None:
                add(f"nsynth-test/audio/{note}.wav", data)
    return buf.getvalue()


@pytest.fixture
def nsynth_mirror(mirror):
    notes = {"bass_synthetic_068-049-025": tone_bytes(110), "keyboard_electronic_001-021-127": tone_bytes(220),
             "guitar_acoustic_010-066-100": tone_bytes(330), "reed_acoustic_037-068-127": tone_bytes(440),
             "flute_acoustic_002-077-100": b"RIFF not really a wav", "brass_acoustic_006-050-075": None}
    url_file(mirror["urls"], NSYNTH_URL, nsynth_archive(notes))
    return mirror


@pytest.fixture
def hummusqa_mirror(mirror):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = []
    for k, (answer, others) in enumerate([("Piano", ["Guitar", "Violin", "Drums"]), ("Fast", ["Slow", "Medium", "Rubato"]),
                                          ("Minor", ["Major", "Dorian", "Lydian"]), ("Waltz", ["March", "Tango", "Polka"])]):
        rows.append({"identifier": f"hq{k}", "audio": {"bytes": tone_bytes(200 + 90 * k), "path": f"hq{k}.wav"},
                     "question": f"Question {k} about the excerpt?", "answer": answer, "distractor_1": others[0],
                     "distractor_2": others[1], "distractor_3": others[2], "main_category": "instrumentation",
                     "secondary_categories": "", "difficulty": "easy", "excerpt_start_time": "0:00",
                     "excerpt_end_time": "0:10", "song_link": "", "jamendo_id": str(100 + k), "song_name": "",
                     "artist_name": "", "album_name": "", "song_license_url": "https://creativecommons.org/licenses/by/4.0/"})
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    from musiceval.catalogue.hummusqa import REVISION

    hub_dataset(mirror["hub"], "mtg-upf/HumMusQA", {"data/test-00000-of-00001.parquet": buf.getvalue()}, commit=REVISION)
    return mirror
