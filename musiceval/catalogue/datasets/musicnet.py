"""MusicNet (Thickstun et al. 2017) for factual QA: composer and instrument labels per recording.

``musicnet_metadata.csv`` has one row per recording (``id, composer, composition, movement,
ensemble, source, transcriber, catalog_name, seconds``). It names an *ensemble*, not the
instruments, so instrument labels come from the documented table ``musicnet_ensembles.json``
(ensemble -> instruments, plus per-work overrides such as Schubert's "Trout" quintet with double
bass). When the full dataset's note labels are present (``{train,test}_labels/<id>.csv`` with an
``instrument`` column of MusicNet's MIDI program codes), the instruments actually playing replace
the table. Instrument names follow the normalisation of docs/protocols/factual.md (contrabass -> bass).
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from musiceval.records import Item, ItemFailure

ENSEMBLES_FILE = Path(__file__).parent / "musicnet_ensembles.json"
METADATA_COLUMNS = ("id", "composer", "composition", "ensemble")
QUESTIONS = {
    "instruments": "Which instruments are used in this piece of music?",
    "composers": "Which classical composer's style does this piece resemble the most?",
}


def ensemble_table() -> dict:
    """The ensemble -> instruments table, its overrides and MusicNet's MIDI program names."""
    return json.loads(ENSEMBLES_FILE.read_text("utf-8"))


def note_label_instruments(path: str | Path, programs: dict[str, str] | None = None) -> list[str]:
    """Instruments (normalised names, in order of first note) in one MusicNet note-label CSV."""
    programs = programs or ensemble_table()["midi_programs"]
    out: dict[str, None] = {}
    with Path(path).open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames is None or "instrument" not in reader.fieldnames:
            raise ValueError(f"{path}: no 'instrument' column; expected MusicNet note labels (start_time,end_time,instrument,note,...)")
        for row in reader:
            code = str(row["instrument"]).strip()
            if code not in programs:
                raise ValueError(f"{path}: unknown MusicNet instrument code {code!r}; known: {sorted(programs, key=int)}")
            out.setdefault(programs[code], None)
    return list(out)


def load_musicnet(metadata_csv: str | Path, *, task: str = "instruments", labels_dir: str | Path | None = None,
                  audio_dir: str | Path | None = None) -> tuple[list[Item], list[ItemFailure]]:
    """One :class:`Item` per recording, labelled with its instruments or its composer.

    Parameters
    ----------
    task : {"instruments", "composers"}
    labels_dir : path, optional
        The MusicNet root holding ``train_labels/`` and ``test_labels/``; when a recording's
        label CSV is there, its instruments come from the notes rather than the ensemble table.
    audio_dir : path, optional
        Root holding ``{train,test}_data/<id>.wav``; the item's ``audio`` when the file exists,
        else ``audio=None`` and ``meta["missing_audio"]`` naming the expected path.

    Recordings whose ensemble is not in the table (and have no note labels) are failures naming
    the table file to extend.
    """
    if task not in QUESTIONS:
        raise ValueError(f"task must be one of {sorted(QUESTIONS)}, got {task!r}")
    path = Path(metadata_csv)
    if not path.is_file():
        raise FileNotFoundError(f"MusicNet metadata {str(path)!r} not found; download musicnet_metadata.csv from the MusicNet release (Zenodo record 5120004)")
    table = ensemble_table()
    items: list[Item] = []
    failures: list[ItemFailure] = []
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in METADATA_COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing}; expected MusicNet's metadata header")
        for row in reader:
            rid = (row["id"] or "").strip()
            if not rid.isdigit():
                failures.append(ItemFailure(f"{path.name}:{reader.line_num}", f"bad id {rid!r}"))
                continue
            source = "metadata"
            if task == "composers":
                labels = [row["composer"].strip()]
            else:
                note_csv = next((Path(labels_dir) / split / f"{rid}.csv" for split in ("train_labels", "test_labels")
                                 if labels_dir and (Path(labels_dir) / split / f"{rid}.csv").is_file()), None)
                if note_csv is not None:
                    try:
                        labels, source = note_label_instruments(note_csv, table["midi_programs"]), "notes"
                    except ValueError as exc:
                        failures.append(ItemFailure(rid, str(exc)))
                        continue
                else:
                    key = f"{row['composer'].strip()}|{row['composition'].strip()}"
                    labels = table["overrides"].get(key) or table["ensembles"].get(row["ensemble"].strip())
                    if not labels:
                        failures.append(ItemFailure(rid, f"ensemble {row['ensemble']!r} is not in {ENSEMBLES_FILE.name}; add its instruments there"))
                        continue
            audio = None
            meta = {"composer": row["composer"], "ensemble": row["ensemble"], "composition": row["composition"],
                    "label_source": source}
            if audio_dir:
                audio = next((str(p) for split in ("train_data", "test_data") if (p := Path(audio_dir) / split / f"{rid}.wav").is_file()), None)
                if audio is None:
                    meta["missing_audio"] = str(Path(audio_dir) / "{train,test}_data" / f"{rid}.wav")
            items.append(Item(id=rid, question=QUESTIONS[task], audio=audio, labels=tuple(labels), group=rid, meta=meta))
    return items, failures
