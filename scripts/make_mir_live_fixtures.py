"""Write ``musiceval/evals/audio/cmi_bench/CMI_<task>.jsonl``: CMI-Bench instructions over synthesised clips.

Clips: the 15 of ``musiceval/evals/audio/manifest.jsonl`` (``scripts/make_audio_fixtures.py``) plus 23
more rendered here the same way (that script's ``render``: pretty_midi's GM soundfont through
tinysoundfont, 16 kHz mono FLAC) into ``musiceval/evals/audio/cmi_bench/audio/`` with their own
``manifest.jsonl``: 6 keys, 6 pitches, 6 tempi and 5 instruments, so that each task has 9 to 10
items and a perfect model's paired gate has a usable p-value. Each line follows the CMI-Bench
instruction layout
(``instruction``, ``input``, ``output``, ``uuid``, ``split``, ``task_type``, ``domain``,
``audio_path``, ``audio_start``, ``audio_end``, ``source``, ``other``); audio paths are relative
to ``musiceval/evals/audio`` (the data directory of the live run). Tasks:

- ``GS_key`` over the ``key_*`` clips; output the key in CMI-Bench's flat spelling ("Eb major");
- ``Nsynth_pitch`` over the ``pitch_*`` clips; output the MIDI number ("60");
- ``gtzan_beat`` over the ``tempo_*`` clips; output the rendered beat times ("0.25s,0.75s,...",
  two decimals as upstream);
- ``Nsynth_instrument`` over the ``instrument_*`` clips; output the instrument name as the
  instruction lists it ("piano", "violin", "cello", "bass", ...). Upstream the answers are NSynth
  family labels ("keyboard", "string", "brass") that the instruction never lists, so a model that
  follows the instruction cannot be right; here it can.

The instruction texts are the CMI-Bench test prompts, copied verbatim from the ``question`` field
of the recorded outputs in ``fixtures/mir/outputs/mullama/`` (nicolaus625/CMI-bench @ 4c15f41,
CC BY 4.0). The GS_key prompt begins "nstruction for Musical Key Estimation" there (its first
letter is missing upstream); it is kept as the models received it.

Usage: ``python scripts/make_mir_live_fixtures.py [--render]``: ``--render`` (re)renders the extra
clips (needs ``pip install --no-deps tinysoundfont``); without it only the instruction files are
rewritten from the two manifests. Deterministic for a given soundfont and tinysoundfont version.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AUDIO = ROOT / "musiceval" / "evals" / "audio"
OUT = AUDIO / "cmi_bench"
EXTRA = OUT / "audio"  # the extra clips; paths in the instructions are relative to AUDIO
PROMPTS = ROOT / "fixtures" / "mir" / "outputs" / "mullama"
MAJOR, MINOR = (0, 2, 4, 5, 7, 9, 11, 12), (0, 2, 3, 5, 7, 8, 10, 12)
EXTRA_KEYS = {"A major": (57, MAJOR), "E minor": (52, MINOR), "F major": (53, MAJOR),
              "C minor": (48, MINOR), "Ab major": (56, MAJOR), "Gb minor": (54, MINOR)}
EXTRA_PITCHES = (40, 45, 52, 57, 64, 72)
EXTRA_TEMPI = (75, 100, 110, 135, 160, 180)
#: names from the CMI-Bench instrument prompt -> GM program
EXTRA_INSTRUMENTS = {"guitar": 24, "cello": 42, "saxophone": 65, "clarinet": 71, "bass": 32}
#: CMI-Bench task -> (manifest task, task_type minor)
TASKS = {
    "GS_key": ("key", "key_detection"),
    "Nsynth_pitch": ("pitch", "pitch_estimation"),
    "gtzan_beat": ("tempo", "beat_tracking"),
    "Nsynth_instrument": ("instrument", "instrument_classification"),
}


def prompt(task: str) -> str:
    records = json.loads((PROMPTS / f"mullama_{task}.jsonl").read_text(encoding="utf-8"))
    questions = {r["question"] for r in records}
    if len(questions) != 1:
        raise SystemExit(f"mullama_{task}.jsonl: expected one prompt for every record, found {len(questions)}")
    return questions.pop()


def reference(task: str, clip: dict) -> str:
    if task == "gtzan_beat":
        return ",".join(f"{round(b, 2):g}s" for b in clip["meta"]["beats"])
    return str(clip["answer"])


def _audio_fixtures():
    """``scripts/make_audio_fixtures.py`` as a module (its ``render`` and clip conventions)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_audio_fixtures", ROOT / "scripts" / "make_audio_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def render_extra() -> list[dict]:
    """Render the extra clips into ``EXTRA`` (same recipes as musiceval/evals/audio) and return their manifest rows."""
    import soundfile as sf

    af = _audio_fixtures()
    made: list[tuple[str, object, dict]] = []
    arpeggio = [48, 52, 55, 60, 55, 52, 48]  # one octave lower than musiceval/evals/audio: bass and cello range
    for name, program in EXTRA_INSTRUMENTS.items():
        notes = [(0.5 * i, 0.5 * i + 0.45, p, 100) for i, p in enumerate(arpeggio)]
        made.append((f"instrument_{name}", af.render(notes, program, 4.0), {"task": "instrument", "answer": name}))
    for key, (tonic, steps) in EXTRA_KEYS.items():
        scale = [tonic + d for d in steps]
        third = 4 if key.endswith("major") else 3
        t0 = 0.3 * len(scale)
        notes = [(0.3 * i, 0.3 * i + 0.28, p, 90) for i, p in enumerate(scale)]
        notes += [(t0, t0 + 1.2, tonic + d, 90) for d in (0, third, 7, 12)]
        made.append((f"key_{key.replace(' ', '_').lower()}", af.render(notes, 0, t0 + 1.6), {"task": "key", "answer": key}))
    for bpm in EXTRA_TEMPI:
        period, n_beats = 60.0 / bpm, int(6.0 * bpm / 60.0)
        beats = [round(0.25 + i * period, 6) for i in range(n_beats)]
        notes = [(b, b + 0.1, 76, 127 if i % 4 == 0 else 80) for i, b in enumerate(beats)]
        made.append((f"tempo_{bpm}bpm", af.render(notes, 115, beats[-1] + 0.5),
                     {"task": "tempo", "answer": str(bpm), "meta": {"tempo_bpm": bpm, "beats": beats, "downbeats": beats[::4]}}))
    for pitch in EXTRA_PITCHES:
        made.append((f"pitch_{af.note_name(pitch).lower()}", af.render([(0.1, 2.6, pitch, 100)], 0, 3.0),
                     {"task": "pitch", "answer": str(pitch), "meta": {"midi_pitch": pitch, "note": af.note_name(pitch)}}))
    EXTRA.mkdir(parents=True, exist_ok=True)
    rows = []
    for clip_id, audio, info in made:
        sf.write(EXTRA / f"{clip_id}.flac", audio, af.SR_OUT, subtype="PCM_16")
        rows.append({"id": clip_id, "audio": f"{clip_id}.flac", "group": clip_id,
                     "duration_s": round(len(audio) / af.SR_OUT, 4), **info})
    with open(EXTRA / "manifest.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(row) + "\n" for row in rows)
    return rows


def _manifest(path: Path, prefix: str) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [{**row, "audio": prefix + row["audio"]} for row in rows]


def build() -> dict[str, list[dict]]:
    clips = _manifest(AUDIO / "manifest.jsonl", "") + _manifest(EXTRA / "manifest.jsonl", "cmi_bench/audio/")
    out: dict[str, list[dict]] = {}
    for task, (kind, minor) in TASKS.items():
        text = prompt(task)
        out[task] = [{
            "instruction": text, "input": "<|SOA|><AUDIO><|EOA|>", "output": reference(task, clip), "uuid": "",
            "split": ["test"], "task_type": {"major": ["seq_multi-class" if task == "gtzan_beat" else "multi-class"], "minor": [minor]},
            "domain": "music", "audio_path": [clip["audio"]], "audio_start": 0.0, "audio_end": clip["duration_s"],
            "source": "musiceval-synth", "other": {"tag": "null", "clip": clip["id"]},
        } for clip in clips if clip["task"] == kind]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--render", action="store_true", help="(re)render the extra clips first")
    args = ap.parse_args()
    if args.render:
        print(f"rendered {len(render_extra())} clips into {EXTRA}")
    OUT.mkdir(parents=True, exist_ok=True)
    for task, rows in build().items():
        with open(OUT / f"CMI_{task}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        print(f"CMI_{task}.jsonl: {len(rows)} instructions")


if __name__ == "__main__":
    main()
