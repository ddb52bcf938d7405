"""Music captioning reference sets: Song Describer and MusicCaps CSVs (``../shared/data/captions``).

Layouts
-------
- **Song Describer** (``song_describer.csv``): ``caption_id, track_id, caption, is_valid_subset,
  familiarity, artist_id, album_id, path, duration``; several captions per track. The clip id is
  ``track_id``; its reference set is every caption of that track (``valid_only=True`` keeps the
  rows with ``is_valid_subset == True``, the published evaluation subset).
- **MusicCaps** (``musiccaps-public.csv``): ``ytid, start_s, end_s, audioset_positive_labels,
  aspect_list, caption, author_id, is_balanced_subset, is_audioset_eval``; one caption per clip.
  The clip id is ``<ytid>_<start_s>`` (the 10 s window of the YouTube video).

:func:`load_captions` detects the layout from the header and returns one :class:`Item` per clip,
with ``reference`` the first caption and ``meta["references"]`` all of them (multi-reference
metrics: BLEU clips against the maximum count, METEOR/ROUGE-L take the best reference, CIDEr-D
averages over references). Rows with an empty caption are per-item failures.
"""
from __future__ import annotations

import csv
from pathlib import Path

from musiceval.records import Item, ItemFailure

SONG_DESCRIBER_COLUMNS = {"caption_id", "track_id", "caption"}
MUSICCAPS_COLUMNS = {"ytid", "start_s", "caption"}


def load_captions(path: str | Path, *, valid_only: bool = False) -> tuple[list[Item], list[ItemFailure]]:
    """Load a Song Describer or MusicCaps CSV as captioning items with reference sets."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: captions CSV not found (Song Describer or MusicCaps public CSV)")
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        header = set(reader.fieldnames or ())
        if SONG_DESCRIBER_COLUMNS <= header:
            kind = "song_describer"
        elif MUSICCAPS_COLUMNS <= header:
            kind = "musiccaps"
        else:
            raise ValueError(f"{path}: header {sorted(header)} is neither Song Describer ({sorted(SONG_DESCRIBER_COLUMNS)}) "
                             f"nor MusicCaps ({sorted(MUSICCAPS_COLUMNS)})")
        refs: dict[str, list[str]] = {}
        audio: dict[str, str | None] = {}
        failures: list[ItemFailure] = []
        for line, row in enumerate(reader, start=2):
            if kind == "song_describer":
                clip = (row.get("track_id") or "").strip()
                if valid_only and (row.get("is_valid_subset") or "").strip() != "True":
                    continue
                clip_audio = (row.get("path") or "").strip() or None
            else:
                clip = f"{(row.get('ytid') or '').strip()}_{(row.get('start_s') or '').strip()}"
                clip_audio = None
            caption = (row.get("caption") or "").strip()
            if not clip.strip("_") or not caption:
                failures.append(ItemFailure(clip or f"{path.name}:{line}", f"{path.name}:{line}: empty clip id or caption"))
                continue
            refs.setdefault(clip, []).append(caption)
            audio.setdefault(clip, clip_audio)
    items = [
        Item(id=clip, question="Describe the music.", audio=audio[clip], reference=captions[0], group=clip,
             meta={"references": tuple(captions), "dataset": kind})
        for clip, captions in refs.items()
    ]
    return items, failures
