"""Render ``musiceval/evals/audio/``: short clips with exact ground truth, and their manifest.

Every clip is rendered from MIDI events through pretty_midi's bundled General MIDI soundfont
(``TimGM6mb.sf2``) with tinysoundfont (``pip install --no-deps tinysoundfont``), mixed to mono,
resampled to 16 kHz with soxr, peak-normalised to 0.5 and written as 16-bit FLAC. The ground truth
is the MIDI itself, so it is exact:

- ``instrument_*``: one GM instrument plays a C-major arpeggio (piano, violin, flute, trumpet);
- ``key_*``: piano plays the scale and the tonic triad of a known key;
- ``tempo_*``: a woodblock in 4/4 at a known tempo, accented downbeats; beat and downbeat times;
- ``pitch_*``: one sustained piano note of known MIDI pitch (NSynth-style).

Usage: ``python scripts/make_audio_fixtures.py [--out musiceval/evals/audio]``. The output is
deterministic for a given soundfont and tinysoundfont version.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

SR_RENDER, SR_OUT = 44_100, 16_000
INSTRUMENTS = {"piano": 0, "violin": 40, "flute": 73, "trumpet": 56}
KEYS = {  # name -> (tonic MIDI note, scale intervals)
    "G major": (55, (0, 2, 4, 5, 7, 9, 11, 12)),
    "D minor": (50, (0, 2, 3, 5, 7, 8, 10, 12)),
    "Eb major": (51, (0, 2, 4, 5, 7, 9, 11, 12)),
    "B minor": (47, (0, 2, 3, 5, 7, 8, 10, 12)),
}
TEMPI = (90, 120, 150)
PITCHES = (48, 60, 67, 76)
NOTE_NAMES = ("C", "Db", "D", "Eb", "E", "F", "Gb", "G", "Ab", "A", "Bb", "B")


def soundfont_path() -> str:
    import pretty_midi

    return os.path.join(os.path.dirname(pretty_midi.__file__), "TimGM6mb.sf2")


def render(events: list[tuple[float, float, int, int]], program: int, seconds: float) -> np.ndarray:
    """Render ``(start_s, end_s, pitch, velocity)`` notes with one GM program; mono 16 kHz float32."""
    try:
        import tinysoundfont
    except ImportError as exc:
        raise SystemExit("tinysoundfont is needed: .venv/bin/pip install --no-deps tinysoundfont") from exc
    import soxr

    synth = tinysoundfont.Synth(samplerate=SR_RENDER)
    sfid = synth.sfload(soundfont_path())
    synth.program_select(0, sfid, 0, program)
    timeline = sorted([(s, 1, p, v) for s, _, p, v in events] + [(e, 0, p, 0) for _, e, p, _ in events])
    out, now = [], 0
    for t, on, pitch, vel in timeline:
        n = int(round(t * SR_RENDER)) - now
        if n > 0:
            out.append(np.frombuffer(synth.generate(n), dtype=np.float32).copy())
            now += n
        synth.noteon(0, pitch, vel) if on else synth.noteoff(0, pitch)
    rest = int(round(seconds * SR_RENDER)) - now
    if rest > 0:
        out.append(np.frombuffer(synth.generate(rest), dtype=np.float32).copy())
    stereo = np.concatenate(out).reshape(-1, 2)
    mono = soxr.resample(stereo.mean(axis=1), SR_RENDER, SR_OUT, quality="HQ").astype(np.float32)
    peak = float(np.max(np.abs(mono))) or 1.0
    return (0.5 * mono / peak).astype(np.float32)


def note_name(midi: int) -> str:
    return f"{NOTE_NAMES[midi % 12]}{midi // 12 - 1}"


def build() -> list[tuple[str, np.ndarray, dict]]:
    clips = []
    arpeggio = [60, 64, 67, 72, 67, 64, 60]
    for name, program in INSTRUMENTS.items():
        notes = [(0.5 * i, 0.5 * i + 0.45, p, 100) for i, p in enumerate(arpeggio)]
        clips.append((f"instrument_{name}", render(notes, program, 4.0), {
            "task": "instrument", "answer": name, "labels": [name], "choices": list(INSTRUMENTS),
            "question": "Which instrument is playing: piano, violin, flute or trumpet? Answer with one word.",
            "meta": {"gm_program": program, "pitches": arpeggio},
        }))
    for key, (tonic, steps) in KEYS.items():
        scale = [tonic + s for s in steps]
        notes = [(0.3 * i, 0.3 * i + 0.28, p, 90) for i, p in enumerate(scale)]
        third = 4 if key.endswith("major") else 3
        t0 = 0.3 * len(scale)
        notes += [(t0, t0 + 1.2, tonic + d, 90) for d in (0, third, 7, 12)]
        clips.append((f"key_{key.replace(' ', '_').lower()}", render(notes, 0, t0 + 1.6), {
            "task": "key", "answer": key, "labels": [key],
            "question": "What is the key of this piece? Answer with the tonic and mode, e.g. 'C major'.",
            "meta": {"pitches": scale + [tonic + d for d in (0, third, 7, 12)]},
        }))
    for bpm in TEMPI:
        period, n_beats = 60.0 / bpm, int(6.0 * bpm / 60.0)
        beats = [round(0.25 + i * period, 6) for i in range(n_beats)]
        notes = [(b, b + 0.1, 76, 127 if i % 4 == 0 else 80) for i, b in enumerate(beats)]
        clips.append((f"tempo_{bpm}bpm", render(notes, 115, beats[-1] + 0.5), {
            "task": "tempo", "answer": str(bpm), "labels": [str(bpm)],
            "question": "What is the tempo of this clip in beats per minute? Answer with a number.",
            "meta": {"tempo_bpm": bpm, "beats": beats, "downbeats": beats[::4], "meter": "4/4"},
        }))
    for pitch in PITCHES:
        clips.append((f"pitch_{note_name(pitch).lower()}", render([(0.1, 2.6, pitch, 100)], 0, 3.0), {
            "task": "pitch", "answer": str(pitch), "labels": [str(pitch), note_name(pitch)],
            "question": "What is the MIDI pitch number of this note? Answer with a number.",
            "meta": {"midi_pitch": pitch, "note": note_name(pitch), "frequency_hz": round(440.0 * 2 ** ((pitch - 69) / 12), 3)},
        }))
    return clips


def main() -> None:
    import soundfile as sf

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "musiceval" / "evals" / "audio")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for clip_id, audio, info in build():
        sf.write(args.out / f"{clip_id}.flac", audio, SR_OUT, subtype="PCM_16")
        rows.append({"id": clip_id, "audio": f"{clip_id}.flac", "group": clip_id,
                     "duration_s": round(len(audio) / SR_OUT, 4), **info})
    with open(args.out / "manifest.jsonl", "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    total = sum(p.stat().st_size for p in args.out.iterdir())
    print(f"wrote {len(rows)} clips and manifest.jsonl to {args.out} ({total / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
