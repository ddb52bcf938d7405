"""Captioning sets scored as free-form answers: MusicCaps (evaluation split) and Song Describer.

**MusicCaps** (Agostinelli et al. 2023): huggingface.co/datasets/google/MusicCaps,
``musiccaps-public.csv`` (columns ``ytid, start_s, end_s, audioset_positive_labels, aspect_list,
caption, author_id, is_balanced_subset, is_audioset_eval``), licence CC BY-SA 4.0. The evaluation
split is ``is_audioset_eval == True``: 2,858 of 5,521 clips (counted on the CSV in
``../shared/data/captions``). Audio is on YouTube, not shipped: ``--audio-dir`` with the 10 s clips
named ``[<ytid>]-[<start>-<end>].wav`` (MuChoMusic's convention) or ``<ytid>.wav``.
Unpinned: no commit of the hub repository could be read here.

**Song Describer** (Manco et al. 2023): Zenodo record 10072001 (DOI in
mulab-mir/song-describer-dataset's README), ``song_describer.csv`` (columns ``caption_id, track_id,
caption, is_valid_subset, familiarity, artist_id, album_id, path, duration``): 1,106 captions of
706 tracks; one item per track with every caption as a reference. Licence CC BY-SA 4.0 (captions);
the audio (MTG-Jamendo, CC licences) comes with the record: pass its folder as ``--audio-dir``
(clips found by ``path``, or its ``.2min.mp3`` crop). The CSV's file name is the one MuChoMusic's
loader reads; the record's file list was not checked here.

Prompt: "Describe the music." (one generic captioning question for every clip, so the Random
condition is exactly another clip's answer). Metrics: the free-form protocol with all references.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from musiceval.catalogue.spec import ALL_CONTROLS, AudioIndex, Question, Source, register_benchmark

PROMPT = "Describe the music."
MUSICCAPS_CSV = "musiccaps-public.csv"
SDD_CSV = "song_describer.csv"


def _rows(path: Path) -> list[dict]:
    import csv

    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def locate_musiccaps(q: Question, index: AudioIndex) -> str | None:
    ytid, start, end = q.meta["ytid"], q.meta["start_s"], q.meta["end_s"]
    return (index.by_basename(f"[{ytid}]-[{start}-{end}].wav") or index.by_prefix(f"[{ytid}]-[")
            or index.by_basename(f"{ytid}.wav"))


@register_benchmark(
    name="musiccaps", title="MusicCaps evaluation split (captions, free-form)",
    source=Source("hub", repo_id="google/MusicCaps", files=(MUSICCAPS_CSV,),
                  unpinned="no commit of google/MusicCaps could be read here"),
    licence="CC BY-SA 4.0 (captions); audio: YouTube, not redistributed", items=2858,
    audio="not shipped: pass --audio-dir with the 10 s clips ([<ytid>]-[<start>-<end>].wav or <ytid>.wav)",
    protocol="freeform", answer_format="musiceval-freeform", prompt=PROMPT,
    parser="none (free-form metrics against the caption)", controls=ALL_CONTROLS, question_files=(MUSICCAPS_CSV,),
    locate_audio=locate_musiccaps,
    verified="columns and the 2,858-clip eval split on the CSV in shared/data/captions; revision unpinned",
)
def musiccaps_questions(files: Mapping[str, Path]) -> list[Question]:
    out = []
    for row in _rows(files[MUSICCAPS_CSV]):
        if str(row.get("is_audioset_eval", "")).strip() != "True":
            continue
        ytid, start, end = row["ytid"].strip(), str(int(float(row["start_s"]))), str(int(float(row["end_s"])))
        clip = f"{ytid}_{start}"
        out.append(Question(id=clip, prompt=PROMPT, question=PROMPT, audio_key=clip, reference=row["caption"].strip(),
                            group=clip, meta={"ytid": ytid, "start_s": start, "end_s": end}))
    return out


def locate_sdd(q: Question, index: AudioIndex) -> str | None:
    path = q.audio_key or ""
    stem = Path(path).name.removesuffix(".mp3")
    return index.find(path) or index.by_basename(f"{stem}.2min.mp3") or index.by_basename(f"{stem}.mp3")


@register_benchmark(
    name="song-describer", title="Song Describer (captions, free-form)",
    source=Source("url", urls=("https://zenodo.org/records/10072001/files/song_describer.csv",),
                  pin="Zenodo record 10072001 (records are immutable)"),
    licence="CC BY-SA 4.0 (captions); audio: MTG-Jamendo CC licences", items=706,
    audio="not shipped with the CSV: pass --audio-dir with the record's audio (<dir>/<track>.mp3 or .2min.mp3)",
    protocol="freeform", answer_format="musiceval-freeform", prompt=PROMPT,
    parser="none (free-form metrics, every caption of the track a reference)", controls=ALL_CONTROLS,
    question_files=(SDD_CSV,), locate_audio=locate_sdd,
    verified="columns and 706 tracks / 1,106 captions on the CSV in shared/data/captions; record file list not checked",
)
def song_describer_questions(files: Mapping[str, Path]) -> list[Question]:
    refs: dict[str, list[str]] = {}
    paths: dict[str, str] = {}
    for row in _rows(files[SDD_CSV]):
        track, caption = row["track_id"].strip(), row["caption"].strip()
        if track and caption:
            refs.setdefault(track, []).append(caption)
            paths.setdefault(track, row.get("path", "").strip())
    return [Question(id=track, prompt=PROMPT, question=PROMPT, audio_key=paths[track] or f"{track}.mp3",
                     reference=tuple(captions), group=track) for track, captions in refs.items()]
