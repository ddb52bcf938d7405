"""Audio I/O for live Music LMs: safe paths, decoding, resampling, windows, chunks, noise.

Conventions
-----------
- Every waveform is a 1-d ``float32`` numpy array in [-1, 1] at an explicit sample rate; multi-channel
  files are mixed down to mono by averaging the channels.
- Files are read with ``soundfile`` (libsndfile: WAV, FLAC, OGG/Vorbis, and MP3 where the installed
  libsndfile is 1.1 or newer) and resampled with ``soxr`` (high quality, deterministic).
- ``audio_start`` / ``audio_end`` (seconds, CMI-Bench manifest fields) select a window; only the
  window's frames are decoded.
- Long audio is cut into consecutive chunks (60 s in the published setups); the last chunk keeps its
  natural length and is dropped only when it is shorter than ``min_chunk_seconds``.
- Every problem with one file (missing, empty, corrupt, a window outside the file, a path that
  escapes the data directory) raises :class:`AudioError`, whose message names the file; callers
  turn it into a per-item failure, never a crashed batch.

Functions
---------
- :func:`resolve_audio_path`: a manifest path -> an absolute path inside the data directory.
- :func:`load_audio`: decode, mix down, window and resample one file.
- :func:`resample`, :func:`chunk_audio`, :func:`white_noise_like`, :func:`silence_like`.
- :func:`audio_content_hash`: a stable hash of a waveform and its rate (the response-cache key).
- :data:`SYNTHESISED_AUDIO`: the folder of synthesised clips the live-model gates ask about.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

__all__ = [
    "AudioError",
    "PathEscapeError",
    "resolve_audio_path",
    "load_audio",
    "resample",
    "chunk_audio",
    "white_noise_like",
    "silence_like",
    "audio_content_hash",
    "SYNTHESISED_AUDIO",
]

#: the synthesised clips shipped with the package (``scripts/make_*_fixtures.py``): their manifest, the
#: free-form questions and the CMI-Bench instructions over them, with exact ground truth (instrument,
#: key, tempo, pitch) for the live-model gates (docs/evaluate-your-model.md)
SYNTHESISED_AUDIO = Path(__file__).resolve().parent / "evals" / "audio"


class AudioError(Exception):
    """One audio file cannot be used; the message names the file and the fix."""


class PathEscapeError(AudioError):
    """A manifest path points outside the data directory (``../``, absolute, or a symlink out)."""


def resolve_audio_path(path: str | os.PathLike[str], data_dir: str | os.PathLike[str]) -> Path:
    """Resolve a manifest's audio path against ``data_dir``, refusing paths that leave it.

    Parameters
    ----------
    path : str or path-like
        The path as written in the manifest, relative to ``data_dir``.
    data_dir : str or path-like
        The dataset's root directory.

    Returns
    -------
    Path
        The absolute, symlink-resolved path. It need not exist (a missing file is reported when
        it is loaded, naming the file).

    Raises
    ------
    PathEscapeError
        If ``path`` is absolute, contains a ``..`` component, or resolves (through symlinks) to a
        location outside ``data_dir``.
    """
    raw = str(path)
    if not raw.strip():
        raise AudioError("empty audio path in manifest; give a path relative to the data directory")
    if "\x00" in raw:
        raise PathEscapeError(f"audio path {raw!r} contains a NUL byte; fix the manifest")
    candidate = Path(raw)
    if candidate.is_absolute() or raw.startswith(("\\", "~")) or (len(raw) > 1 and raw[1] == ":"):
        raise PathEscapeError(
            f"audio path {raw!r} is absolute; manifest paths must be relative to the data "
            f"directory {str(data_dir)!r}"
        )
    if ".." in candidate.parts or ".." in raw.replace("\\", "/").split("/"):
        raise PathEscapeError(
            f"audio path {raw!r} contains '..' and could escape the data directory "
            f"{str(data_dir)!r}; fix the manifest"
        )
    try:
        root = Path(data_dir).resolve()
        resolved = (root / candidate).resolve()
    except (OSError, RuntimeError) as exc:  # a name too long, a symlink loop
        raise AudioError(f"audio path {raw[:200]!r} cannot be resolved ({exc.__class__.__name__}: "
                         f"{getattr(exc, 'strerror', None) or exc}); fix the manifest") from None
    if resolved != root and root not in resolved.parents:
        raise PathEscapeError(
            f"audio path {raw!r} resolves to {str(resolved)!r}, outside the data directory "
            f"{str(root)!r} (a symlink out?); copy the file into the data directory"
        )
    return resolved


def load_audio(
    path: str | os.PathLike[str],
    sample_rate: int,
    *,
    start: float | None = None,
    end: float | None = None,
) -> np.ndarray:
    """Read a file as mono float32 at ``sample_rate``, optionally only ``[start, end)`` seconds.

    Parameters
    ----------
    path : str or path-like
        An audio file soundfile can decode (validate manifest paths with
        :func:`resolve_audio_path` first).
    sample_rate : int
        Target rate in Hz; the file is resampled with soxr when its rate differs.
    start, end : float, optional
        Window in seconds (``audio_start`` / ``audio_end``). ``end`` past the file's end is
        clipped; ``start`` at or past the end is an error.

    Raises
    ------
    AudioError
        Naming the file: missing, unreadable or corrupt, empty, or an empty window.
    """
    import soundfile as sf

    path = Path(path)
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
    try:
        is_file = path.is_file()
    except OSError as exc:  # e.g. ENAMETOOLONG: a hostile manifest path
        raise AudioError(f"audio file '{str(path)[:200]}' cannot be opened ({exc.strerror}); fix the manifest") from None
    if not is_file:
        raise AudioError(f"audio file '{path}' not found; check the manifest and --data-dir")
    try:
        with sf.SoundFile(str(path)) as f:
            sr, n_frames = f.samplerate, f.frames
            lo = 0 if start is None else int(round(float(start) * sr))
            hi = n_frames if end is None else min(n_frames, int(round(float(end) * sr)))
            if lo < 0 or (end is not None and float(end) <= (start or 0.0)):
                raise AudioError(
                    f"audio file '{path}': invalid window audio_start={start} audio_end={end}"
                )
            if n_frames <= 0:
                raise AudioError(f"audio file '{path}' is empty (0 frames)")
            if lo >= n_frames:
                raise AudioError(
                    f"audio file '{path}': audio_start={start} s is past its end "
                    f"({n_frames / sr:.3f} s)"
                )
            f.seek(lo)
            data = f.read(hi - lo, dtype="float32", always_2d=True)
    except AudioError:
        raise
    except (sf.LibsndfileError, RuntimeError, ValueError, OSError) as exc:
        raise AudioError(f"audio file '{path}' cannot be decoded ({exc}); re-encode it as WAV or FLAC") from exc
    if data.size == 0:
        raise AudioError(f"audio file '{path}' decoded to no samples")
    mono = data.mean(axis=1, dtype=np.float32)
    if not np.all(np.isfinite(mono)):
        raise AudioError(f"audio file '{path}' contains NaN or infinite samples")
    return resample(mono, sr, sample_rate)


def resample(audio: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """Resample a mono waveform with soxr (``"HQ"`` quality); identity when the rates agree."""
    audio = np.asarray(audio, dtype=np.float32)
    if audio.ndim != 1:
        raise ValueError(f"resample expects a mono 1-d waveform, got shape {audio.shape}")
    if rate_in == rate_out:
        return audio
    import soxr

    return np.asarray(soxr.resample(audio, rate_in, rate_out, quality="HQ"), dtype=np.float32)


def chunk_audio(
    audio: np.ndarray,
    sample_rate: int,
    chunk_seconds: float = 60.0,
    *,
    min_chunk_seconds: float = 1.0,
) -> list[np.ndarray]:
    """Cut a waveform into consecutive ``chunk_seconds`` chunks (the published 60 s setup).

    The final, shorter chunk is kept unless it is shorter than ``min_chunk_seconds`` and is not
    the only chunk. Audio shorter than one chunk gives a single chunk.
    """
    if chunk_seconds <= 0:
        raise ValueError(f"chunk_seconds must be positive, got {chunk_seconds}")
    size = int(round(chunk_seconds * sample_rate))
    chunks = [audio[i : i + size] for i in range(0, len(audio), size)] or [audio]
    if len(chunks) > 1 and len(chunks[-1]) < min_chunk_seconds * sample_rate:
        chunks.pop()
    return chunks


def white_noise_like(audio: np.ndarray, seed: int, *, rms: float | None = None) -> np.ndarray:
    """White Gaussian noise with the length of ``audio`` (MuChoMusic's audio attention test).

    The noise has the RMS of ``audio`` (or ``rms`` when given; 0.1 when the clip is silent),
    clipped to [-1, 1], and is a pure function of ``seed`` and the length.
    """
    audio = np.asarray(audio, dtype=np.float32)
    if rms is None:
        rms = float(np.sqrt(np.mean(np.square(audio, dtype=np.float64)))) if audio.size else 0.0
        rms = rms if rms > 1e-6 else 0.1
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(audio.shape[0]).astype(np.float32) * np.float32(rms)
    return np.clip(noise, -1.0, 1.0)


def silence_like(audio: np.ndarray) -> np.ndarray:
    """Digital silence with the length of ``audio``."""
    return np.zeros(np.asarray(audio).shape[0], dtype=np.float32)


def audio_content_hash(audio: np.ndarray | None, sample_rate: int) -> str:
    """A stable hex digest of a waveform's float32 samples and rate (``"none"`` for no audio)."""
    if audio is None:
        return "none"
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{int(sample_rate)}:".encode())
    h.update(np.ascontiguousarray(audio, dtype="<f4").tobytes())
    return h.hexdigest()
