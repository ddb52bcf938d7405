"""Audio I/O: decoding, mono mixdown, windows, resampling, chunks, noise, hashes, path safety."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from musiceval.audio import (
    AudioError,
    PathEscapeError,
    audio_content_hash,
    chunk_audio,
    load_audio,
    resample,
    resolve_audio_path,
    silence_like,
    white_noise_like,
)

FIXTURES = Path(__file__).resolve().parents[1] / "musiceval" / "evals" / "audio"


def tone(freq: float, seconds: float, sr: int) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def dominant_frequency(x: np.ndarray, sr: int) -> float:
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.fft.rfftfreq(len(x), 1 / sr)[np.argmax(spectrum)])


@pytest.mark.parametrize("fmt,subtype", [("WAV", "PCM_16"), ("FLAC", "PCM_16"), ("OGG", "VORBIS"), ("MP3", "MPEG_LAYER_III")])
def test_every_container_decodes_to_mono_float32_at_the_target_rate(tmp_path, fmt, subtype):
    if fmt not in sf.available_formats():
        pytest.skip(f"libsndfile {sf.__libsndfile_version__} cannot write {fmt}")
    sr = 22_050
    stereo = np.stack([tone(440, 1.0, sr), tone(440, 1.0, sr)], axis=1)
    path = tmp_path / f"clip.{fmt.lower()}"
    sf.write(path, stereo, sr, format=fmt, subtype=subtype)
    audio = load_audio(path, 16_000)
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert abs(len(audio) - 16_000) < 1200  # mp3/ogg encoders pad a little
    assert dominant_frequency(audio, 16_000) == pytest.approx(440, abs=3)


def test_stereo_is_mixed_down_by_averaging_channels(tmp_path):
    left, right = np.full(800, 0.5, np.float32), np.full(800, -0.1, np.float32)
    sf.write(tmp_path / "s.wav", np.stack([left, right], 1), 8000, subtype="FLOAT")
    np.testing.assert_allclose(load_audio(tmp_path / "s.wav", 8000), 0.2, atol=1e-6)


def test_window_reads_exactly_audio_start_to_audio_end(tmp_path):
    sr = 8000
    ramp = (np.arange(3 * sr) / (3 * sr)).astype(np.float32)
    sf.write(tmp_path / "r.wav", ramp, sr, subtype="FLOAT")
    window = load_audio(tmp_path / "r.wav", sr, start=1.0, end=2.0)
    np.testing.assert_array_equal(window, ramp[sr : 2 * sr])
    tail = load_audio(tmp_path / "r.wav", sr, start=2.5, end=99)  # end past the file is clipped
    assert len(tail) == sr // 2


def test_resampling_keeps_the_pitch_and_the_duration():
    x = tone(1000, 2.0, 44_100)
    y = resample(x, 44_100, 16_000)
    assert len(y) == 32_000
    assert dominant_frequency(y, 16_000) == pytest.approx(1000, abs=1)
    assert resample(y, 16_000, 16_000) is y


@pytest.mark.parametrize(
    "setup,match",
    [
        (lambda d: None, "not found"),
        (lambda d: (d / "x.wav").write_bytes(b""), "cannot be decoded"),
        (lambda d: (d / "x.wav").write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt garbage" * 3), "cannot be decoded"),
        (lambda d: sf.write(d / "x.wav", np.zeros(0, np.float32), 8000), "empty"),
    ],
    ids=["missing", "zero-bytes", "corrupt-header", "no-frames"],
)
def test_bad_files_raise_an_audio_error_naming_the_file(tmp_path, setup, match):
    setup(tmp_path)
    with pytest.raises(AudioError, match=match) as info:
        load_audio(tmp_path / "x.wav", 16_000)
    assert "x.wav" in str(info.value)


def test_a_window_past_the_end_or_reversed_is_an_error(tmp_path):
    sf.write(tmp_path / "a.wav", np.zeros(8000, np.float32), 8000)
    with pytest.raises(AudioError, match="past its end"):
        load_audio(tmp_path / "a.wav", 8000, start=5.0)
    with pytest.raises(AudioError, match="invalid window"):
        load_audio(tmp_path / "a.wav", 8000, start=0.5, end=0.2)


def test_chunks_are_sixty_seconds_and_a_short_tail_is_dropped():
    sr = 100
    x = np.arange(150 * sr, dtype=np.float32)
    chunks = chunk_audio(x, sr, 60.0)
    assert [len(c) for c in chunks] == [6000, 6000, 3000]
    np.testing.assert_array_equal(np.concatenate(chunks), x)
    assert len(chunk_audio(np.zeros(60 * sr + 50, np.float32), sr, 60.0)) == 1  # 0.5 s tail dropped
    assert len(chunk_audio(np.zeros(10, np.float32), sr, 60.0)) == 1


def test_noise_matches_length_and_rms_and_is_seeded():
    x = tone(440, 1.0, 16_000)
    a, b = white_noise_like(x, seed=1), white_noise_like(x, seed=1)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, white_noise_like(x, seed=2))
    assert len(a) == len(x)
    assert np.sqrt(np.mean(a**2)) == pytest.approx(np.sqrt(np.mean(x**2)), rel=0.05)
    assert np.sqrt(np.mean(white_noise_like(silence_like(x), 0) ** 2)) == pytest.approx(0.1, rel=0.05)


def test_content_hash_depends_on_samples_and_rate_only():
    x = tone(440, 0.1, 16_000)
    assert audio_content_hash(x, 16_000) == audio_content_hash(x.copy(), 16_000)
    assert audio_content_hash(x, 16_000) != audio_content_hash(x, 8_000)
    y = x.copy()
    y[10] += 1e-3
    assert audio_content_hash(x, 16_000) != audio_content_hash(y, 16_000)
    assert audio_content_hash(None, 16_000) == "none"


@pytest.mark.parametrize("bad", ["../secret.wav", "a/../../secret.wav", "/etc/passwd", "~/x.wav", "C:\\x.wav", ""])
def test_manifest_paths_cannot_leave_the_data_directory(tmp_path, bad):
    with pytest.raises(AudioError):
        resolve_audio_path(bad, tmp_path)


def test_a_symlink_pointing_out_of_the_data_directory_is_rejected(tmp_path):
    data, outside = tmp_path / "data", tmp_path / "outside.wav"
    data.mkdir()
    sf.write(outside, np.zeros(100, np.float32), 8000)
    os.symlink(outside, data / "link.wav")
    with pytest.raises(PathEscapeError, match="outside the data directory"):
        resolve_audio_path("link.wav", data)
    (data / "sub").mkdir()
    assert resolve_audio_path("sub/clip.wav", data) == (data / "sub" / "clip.wav").resolve()


def test_synthesised_fixture_clips_have_the_pitch_their_manifest_states():
    rows = [json.loads(line) for line in (FIXTURES / "manifest.jsonl").read_text().splitlines()]
    assert len(rows) >= 12 and sum(p.stat().st_size for p in FIXTURES.iterdir()) < 2_000_000
    pitch_rows = [r for r in rows if r["task"] == "pitch"]
    assert pitch_rows
    for row in pitch_rows:
        audio = load_audio(FIXTURES / row["audio"], 16_000, start=0.2, end=1.2)
        f0 = row["meta"]["frequency_hz"]
        # the strongest partial is a harmonic of the stated fundamental (piano: usually f0 itself)
        ratio = dominant_frequency(audio, 16_000) / f0
        assert abs(ratio - round(ratio)) < 0.03 and round(ratio) >= 1, row["id"]
    for row in (r for r in rows if r["task"] == "tempo"):
        beats = np.array(row["meta"]["beats"])
        np.testing.assert_allclose(np.diff(beats), 60.0 / row["meta"]["tempo_bpm"], atol=1e-5)
        audio = load_audio(FIXTURES / row["audio"], 16_000)
        # an onset (energy rise) sits at every stated beat time
        frame = 160
        env = np.sqrt(np.convolve(audio**2, np.ones(frame) / frame, mode="same"))
        for b in beats:
            i = int(b * 16_000)
            assert env[i + 300 : i + 1300].max() > 4 * env[max(0, i - 1200) : i - 200].mean() + 1e-4, (row["id"], b)


def test_the_fixture_script_regenerates_the_shipped_clips():
    pytest.importorskip("tinysoundfont")
    pytest.importorskip("pretty_midi")
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_audio_fixtures", FIXTURES.parents[2] / "scripts" / "make_audio_fixtures.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rows = {json.loads(line)["id"]: json.loads(line) for line in (FIXTURES / "manifest.jsonl").read_text().splitlines()}
    clips = script.build()
    assert [c[0] for c in clips] == list(rows)
    for clip_id, audio, info in clips:
        shipped, sr = sf.read(FIXTURES / f"{clip_id}.flac", dtype="float32")
        assert sr == 16_000 and info["answer"] == rows[clip_id]["answer"]
        np.testing.assert_allclose(shipped, audio, atol=2 / 32768)  # 16-bit quantisation
