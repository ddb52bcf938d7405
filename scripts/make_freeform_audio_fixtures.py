"""Write ``musiceval/evals/audio/freeform.jsonl``: one free-form question per synthesised clip, with reference
descriptions written by a template from the clip's MIDI ground truth (``musiceval/evals/audio/manifest.jsonl``).

The references are **template-written from the MIDI ground truth**, not human or model text: each
states only facts the MIDI fixes (instrument or General MIDI program, notes, key, tempo and meter,
pitch). Two references per clip (a sentence and a short phrase) exercise the multi-reference rule.
Rows are in the manifest layout ``musiceval generate`` reads (``id``, ``question``, ``audio``,
``group``, ``reference``; ``references`` and ``task`` go to the item's ``meta``).

Usage: ``python scripts/make_freeform_audio_fixtures.py [--check]`` (``--check``: exit 1 when the
file differs from what the manifest gives). Deterministic.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

AUDIO = Path(__file__).resolve().parents[1] / "musiceval" / "evals" / "audio"
QUESTION = "Describe this music: the instrument, the notes or key, and the tempo you hear."
SOURCE = "template-written from the MIDI ground truth (scripts/make_freeform_audio_fixtures.py)"
# instruments of the clips whose manifest row has no gm_program (scripts/make_audio_fixtures.py renders
# key and pitch clips with GM program 0, acoustic grand piano, and tempo clips with 115, woodblock)
INSTRUMENT_OF_TASK = {"key": "piano", "pitch": "piano", "tempo": "woodblock"}
NOTE_NAMES = ("C", "Db", "D", "Eb", "E", "F", "Gb", "G", "Ab", "A", "Bb", "B")


def note_name(midi: int) -> str:
    return f"{NOTE_NAMES[midi % 12]}{midi // 12 - 1}"


def references(row: dict) -> list[str]:
    """Two descriptions of one clip, stating only what its manifest row fixes."""
    task, meta = row["task"], row.get("meta", {})
    if task == "instrument":
        notes = " ".join(note_name(p) for p in meta["pitches"])
        return [f"A solo {row['answer']} plays a C major arpeggio up and back down ({notes}), one note every half second.",
                f"{row['answer'].capitalize()} arpeggio in C major."]
    instrument = INSTRUMENT_OF_TASK[task]
    if task == "key":
        key = row["answer"]
        return [f"A solo {instrument} plays the {key} scale from {note_name(meta['pitches'][0])} upwards, "
                f"then holds the {key} tonic chord; the piece is in {key}.",
                f"{instrument.capitalize()} in {key}."]
    if task == "tempo":
        return [f"A {instrument} clicks a steady beat at {meta['tempo_bpm']} beats per minute in {meta['meter']} time, "
                "accenting the first beat of every bar.",
                f"{instrument.capitalize()} pulse at {meta['tempo_bpm']} BPM."]
    if task == "pitch":
        return [f"A single sustained {instrument} note, {meta['note']} (MIDI pitch {meta['midi_pitch']}, "
                f"about {meta['frequency_hz']:.0f} Hz).",
                f"One {instrument} note: {meta['note']}."]
    raise ValueError(f"{row.get('id')}: unknown task {task!r}")


def freeform_rows(manifest_rows: list[dict]) -> list[dict]:
    rows = []
    for row in manifest_rows:
        refs = references(row)
        rows.append({"id": f"describe_{row['id']}", "audio": row["audio"], "group": row.get("group", row["id"]),
                     "question": QUESTION, "reference": refs[0], "references": refs, "task": row["task"],
                     "source": SOURCE})
    return rows


def render(manifest: Path = AUDIO / "manifest.jsonl") -> str:
    manifest_rows = [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines() if line.strip()]
    return "".join(json.dumps(r) + "\n" for r in freeform_rows(manifest_rows))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the file is not what the manifest gives")
    args = ap.parse_args()
    out, text = AUDIO / "freeform.jsonl", render()
    if args.check:
        same = out.is_file() and out.read_text(encoding="utf-8") == text
        print(f"{out}: {'up to date' if same else 'OUT OF DATE; rerun without --check'}")
        return 0 if same else 1
    out.write_text(text, encoding="utf-8")
    print(f"wrote {text.count(chr(10))} questions to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
