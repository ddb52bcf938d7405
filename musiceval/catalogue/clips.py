"""Checking one clip: decode it once, record what it is, and say why it cannot be used.

:func:`inspect_clip` returns a :class:`ClipRecord` (sha256 of the file's bytes, size, duration,
sample rate, channels, peak level) or raises :class:`ClipError` naming the file and the problem:
unreadable (not audio, truncated, an unsupported codec), empty (no samples) or silent (every
sample below :data:`SILENCE_PEAK`, about -80 dBFS: a clip that carries nothing to listen to).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from musiceval.catalogue.digests import file_sha256

#: a clip whose absolute peak stays below this (full scale 1.0; about -80 dBFS) is silent
SILENCE_PEAK = 1e-4


class ClipError(ValueError):
    """A clip that cannot be used (the message names the file and why)."""


@dataclass(frozen=True)
class ClipRecord:
    sha256: str
    bytes: int
    mtime_ns: int
    duration_s: float
    sample_rate: int
    channels: int
    peak: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def inspect_clip(path: Path) -> ClipRecord:
    """Decode ``path`` block by block (soundfile) and describe it; :class:`ClipError` when unusable."""
    import soundfile as sf

    try:
        stat = path.stat()
    except OSError as exc:
        raise ClipError(f"{path}: {exc.strerror or exc}") from None
    peak, frames = 0.0, 0
    try:
        with sf.SoundFile(str(path)) as f:
            rate, channels = int(f.samplerate), int(f.channels)
            for block in f.blocks(blocksize=1 << 16, dtype="float32", always_2d=True):
                if block.size:
                    peak = max(peak, float(np.max(np.abs(block))))
                frames += len(block)
    except (RuntimeError, sf.LibsndfileError, OSError, ValueError) as exc:
        raise ClipError(f"{path.name}: cannot be decoded ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    if frames == 0:
        raise ClipError(f"{path.name}: holds no samples")
    if not np.isfinite(peak):
        raise ClipError(f"{path.name}: holds non-finite samples")
    if peak < SILENCE_PEAK:
        raise ClipError(f"{path.name}: silent (peak {peak:.1e} < {SILENCE_PEAK:.0e})")
    return ClipRecord(file_sha256(path), stat.st_size, stat.st_mtime_ns, frames / rate, rate, channels, round(peak, 6))
