"""CMI-Bench's MTT task (MagnaTagATune top-50 tagging) prepared from the user's MagnaTagATune
annotations, as the toolkit builds ``CMI_MTT.jsonl``, which it does not ship.

Source: the MagnaTagATune ``annotations_final.csv`` the user has (tab-separated, quoted: a header
``clip_id``, 188 tags, ``mp3_path``, then one row per clip); pass it as ``--questions`` and the folder
holding its ``mp3_path`` clips (``0/`` .. ``f/``) as ``--audio-dir``. The rule restated from
nicolaus625/CMI-bench ``data/MTT/preprocess.py`` (stored at d110f71) and ``data/MTT/sft_mtt.py``
(stored at 95cd4cd):

- the top-50 tags are the 50 with the most clips (``tags.npy``); their order is
  :data:`musiceval.vocab.cmibench.MTT_TOP50_TAGS`, the order the toolkit's ``tags.npy`` holds and
  its ``evaluate.py`` scores against; a file whose top 50 are other tags is refused;
- clip ``i`` (0-based data row) is in the test split when the first character of its ``mp3_path``,
  read as a hex digit, is 13 or more (folders ``d``, ``e``, ``f``), the validation split at 12 (``c``),
  training below; every clip counts, with tags or without (``CMI_BENCH_TEST_ITEMS["MTT"]`` = 5,329, the
  lines of the toolkit's ``data/MTT/test.tsv``);
- the instruction is "Please provide the tags of given music.", the reference the clip's top-50 tags
  in ``tags.npy`` order joined by ", ", the clip ``data/MTT/mp3/<mp3_path>``, seconds 0 to 30.

Item ids are ``<line>|data/MTT/mp3/<mp3_path>`` with the line the clip would have in ``CMI_MTT.jsonl``
(training, validation, then test rows, each in file order), as the other CMI-Bench entries' are. A row
that is not a clip (too few columns, no ``mp3_path``, a tag value that is not 0 or 1) is refused with
its row number: the file is not MagnaTagATune's annotations. Scoring: the ``tagging`` family.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Mapping

from musiceval.catalogue.spec import AudioIndex, Question, Source, register_benchmark
from musiceval.data.benchmarks import CMI_BENCH_TEST_ITEMS
from musiceval.vocab.cmibench import MTT_TOP50_TAGS

FILE = "annotations_final.csv"
INSTRUCTION = "Please provide the tags of given music."
#: the tag columns of ``annotations_final.csv`` (between ``clip_id`` and ``mp3_path``)
N_TAGS = 188


def split_of(mp3_path: str) -> str:
    """``train``, ``dev`` or ``test`` by the first character of the clip path read as a hex digit."""
    digit = int(mp3_path[0], 16)
    return "train" if digit < 12 else "dev" if digit < 13 else "test"


def read_annotations(path: Path) -> tuple[list[str], list[tuple[str, list[int]]]]:
    """The 188 tag names and ``(mp3_path, 0/1 per tag)`` of every clip; ValueError names a bad row."""
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    if not rows or len(rows[0]) != N_TAGS + 2 or rows[0][-1] != "mp3_path":
        raise ValueError(f"{path}: expected a header of clip_id, {N_TAGS} tags and mp3_path (MagnaTagATune's "
                         f"{FILE}), got {len(rows[0]) if rows else 0} columns")
    clips = []
    for no, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != N_TAGS + 2 or not row[-1].strip():
            raise ValueError(f"{path}: row {no} has {len(row)} columns or no mp3_path; expected {N_TAGS + 2}")
        try:
            values = [int(v) for v in row[1:-1]]
            split_of(row[-1])
        except ValueError:
            raise ValueError(f"{path}: row {no}: tag values must be 0 or 1 and mp3_path start with a hex folder") from None
        if any(v not in (0, 1) for v in values):
            raise ValueError(f"{path}: row {no}: tag values must be 0 or 1")
        clips.append((row[-1], values))
    return rows[0][1:-1], clips


def top50(tags: list[str], clips: list[tuple[str, list[int]]]) -> list[int]:
    """Column indices of :data:`MTT_TOP50_TAGS` in ``tags``, checked to be the 50 most frequent tags."""
    counts = [sum(values[k] for _, values in clips) for k in range(len(tags))]
    missing = [t for t in MTT_TOP50_TAGS if t not in tags]
    if missing:
        raise ValueError(f"the annotations lack the top-50 tags {', '.join(missing[:5])}: not MagnaTagATune's {FILE}")
    columns = [tags.index(t) for t in MTT_TOP50_TAGS]
    floor = min(counts[k] for k in columns)
    above = [tags[k] for k in range(len(tags)) if k not in columns and counts[k] > floor]
    if above:
        raise ValueError(f"tags {', '.join(above[:5])} have more clips than a top-50 tag: these annotations are not those "
                         "the toolkit's tags.npy was computed from")
    return columns


def questions_from_annotations(path: Path) -> list[Question]:
    tags, clips = read_annotations(path)
    columns = top50(tags, clips)
    order = {"train": 0, "dev": 1, "test": 2}
    lines = sorted(range(len(clips)), key=lambda i: (order[split_of(clips[i][0])], i))
    line_of = {i: n for n, i in enumerate(lines)}
    out = []
    for i, (mp3, values) in enumerate(clips):
        if split_of(mp3) != "test":
            continue
        audio = f"data/MTT/mp3/{mp3}"
        reference = ", ".join(MTT_TOP50_TAGS[j] for j, k in enumerate(columns) if values[k])
        out.append(Question(id=f"{line_of[i]}|{audio}", prompt=INSTRUCTION, question=INSTRUCTION, audio_key=audio,
                            reference=reference, group=audio, audio_start=0.0, audio_end=30.0,
                            meta={"task": "MTT", "line": line_of[i], "clip": i, "mp3_path": mp3}))
    return out


def locate(q: Question, index: AudioIndex) -> str | None:
    mp3 = str(q.meta.get("mp3_path", ""))
    key = q.audio_key or ""
    return index.find(mp3) or index.find(key) or index.find(key.removeprefix("data/")) or index.find(f"mp3/{mp3}")


@register_benchmark(
    name="cmi-bench/MTT", title="CMI-Bench MTT (MagnaTagATune top-50 tags, test split)",
    source=Source("local", unpinned="the user's MagnaTagATune annotations_final.csv (the toolkit ships no CMI_MTT.jsonl)"),
    licence="MagnaTagATune's own licence (annotations and clips; not verified here)",
    items=CMI_BENCH_TEST_ITEMS["MTT"],
    audio="not shipped: pass --audio-dir with the folder holding MagnaTagATune's clips (0/ .. f/)",
    protocol="mir", answer_format="cmi-bench", prompt=f"the CMI-Bench instruction: {INSTRUCTION!r}",
    parser="MIR tagging family (musiceval.protocols.mir.metrics.tasks; mir.compat for the toolkit's rules)", controls=(),
    question_files=(FILE,), locate_audio=locate, version="d110f71", task="MTT",
    verified="the rule of data/MTT/preprocess.py (d110f71) and sft_mtt.py (95cd4cd); the test count 5,329 is the lines "
             "of the toolkit's data/MTT/test.tsv (shared/data/cmi-bench/labels/test.tsv), all in folders d, e, f",
)
def questions(files: Mapping[str, Path]) -> list[Question]:
    return questions_from_annotations(files[FILE])
