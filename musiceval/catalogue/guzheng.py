"""CMI-Bench's Guzheng_Tech task (playing-technique detection) prepared from the user's Guzheng_Tech99
label files, as the toolkit builds ``CMI_Guzheng_Tech.jsonl``, which its repository does not ship.

Source: Guzheng_Tech99 (Li et al., ICASSP 2023; ``ccmusic-database/Guzheng_Tech99``: 99 solo
recordings, 79/10/10 for training, validation and test), one ``data/label/<split>/<track>.csv`` per
recording with a header row (``onset_time,offset_time,IPT,note``) and one note per row. Pass the
folder holding ``data/label/`` as ``--questions`` (every training and validation CSV and the ten test
CSVs are read, each hashed into the lock) and the folder holding ``data/audio/test/<track>.flac`` as
``--audio-dir``. The rule restated from nicolaus625/CMI-bench ``data/Guzheng/sft_guzheng.py`` (stored
at 5a071fa):

- the file holds the training, then the validation, then the test clips; only the test clips are
  asked, and their line numbers follow the training and validation clips, so those files are read
  for their clip count (in the published file, 746 training and 83 validation lines precede the 94
  test lines);
- the generator takes the tracks of a split in ``glob`` order, which no other machine reproduces;
  the test tracks are taken in the order the published file and both published outputs of the task
  (MU-LLaMA, LTU) hold them (:data:`TEST_TRACKS`);
- each CSV's first row is the header and is dropped; each cell that reads as a number is that
  number, the others stay text (``np.vectorize`` over ``np.genfromtxt(..., dtype=str)``);
- the clips are 10 s from 0: the offsets are ``np.arange(0, onset of the last row + 10, 10)`` and
  every offset but the last is a clip; a note belongs to the clip with ``offset < onset < offset + 10``
  (strict both sides, the onset in float32 against the offsets in float64), whatever its offset;
- a clip's reference is the Python ``str`` of the list of ``("%.4f" onset, "%.4f" offset,
  technique)`` of its notes in file order, the technique renamed by :data:`TECHNIQUES` and the
  ``boxian`` notes left out; ``[('0.0', '10.0', 'No Tech')]`` when none is left (times stay the
  recording's, not the clip's: the MIR protocol's Guzheng rules read them modulo 10 s);
- the instruction is :data:`INSTRUCTION`, the clip ``data/Guzheng/Guzheng_Tech99/data/audio/test/
  <track>.flac``, ``audio_start`` the offset and ``audio_end`` the offset plus 10.

Item ids are ``<line>|data/Guzheng/Guzheng_Tech99/data/audio/test/<track>.flac`` with the line the
clip has in ``CMI_Guzheng_Tech.jsonl``, as the other CMI-Bench entries' are; the clips of a track share
its group. A CSV whose first row is not a header, with no note, with a row that is not
two finite times and a known technique, is refused with its file and row (the generator crashes on
most of these; the dataset's files hold none). Scoring: the ``guzheng`` family.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping

import numpy as np

from musiceval.catalogue.clip_questions import clip_questions
from musiceval.catalogue.spec import AudioIndex, Question, Source, register_benchmark

#: the toolkit's generator, at the commit it was read
GENERATOR_COMMIT = "5a071fa6ccdee2b305728e8f74e6bae30d62330b"
TASK = "Guzheng_Tech"
AUDIO_PREFIX = "data/Guzheng/Guzheng_Tech99/"
CLIP_SECONDS = 10.0
INSTRUCTION = (
    "Detect the timestep occurrences of Guzheng (Chinese zither) playing techniques in the given audio. The possible "
    "techniques include: Vibrato, Point Note, Upward Portamento, Downward Portamento, Plucks, Glissando, and Tremolo."
    "\n\nThe output format should be a Python string representation of a list containing tuples of (start time "
    "second, end time second, technique). If no technique is detected, return [('start_time', 'end_time', 'No Tech')]."
    "\n\nExample 1:\n\"[('5.5035', '6.0724', 'Upward Portamento'), ('7.0708', '8.0809', 'Upward Portamento'), "
    "('9.6947', '10.0', 'Upward Portamento')]\"\nExample 2:\n\"[('0.0', '10.0', 'No Tech')]\" ")
#: the generator's ``technique`` table: the dataset's label -> the name the reference gives it (None: left out)
TECHNIQUES: Mapping[str, str | None] = {
    "chanyin": "Vibrato", "dianyin": "Point Note", "shanghua": "Upward Portamento", "xiahua": "Downward Portamento",
    "huazhi": "Glissando", "guazou": "Glissando", "lianmo": "Plucks", "liantuo": "Plucks", "yaozhi": "Tremolo",
    "boxian": None,
}
NO_TECHNIQUE = str([("0.0", str(CLIP_SECONDS), "No Tech")])
#: the test tracks in the order of the published ``CMI_Guzheng_Tech.jsonl`` and outputs
TEST_TRACKS = ("74", "17", "86", "58", "7", "102", "31", "14", "66", "94")
#: the training and validation files, read for their clip count
EARLIER_SPLITS = ("data/label/train/*.csv", "data/label/validation/*.csv")


def label_file(track: str, split: str = "test") -> str:
    return f"data/label/{split}/{track}.csv"


def clip_of(track: str) -> str:
    return f"{AUDIO_PREFIX}data/audio/test/{track}.flac"


def _cell(text: str) -> str:
    """A cell as the generator holds it: a number's ``str(float)``, other text unchanged."""
    try:
        return str(float(text))
    except ValueError:
        return text


def read_notes(path: Path) -> list[tuple[str, str, str]]:
    """``(onset, offset, label)`` of every note of a label CSV, as the generator's cells; ValueError
    names the file and the first row (1-based) it cannot read."""
    rows: list[tuple[int, list[str]]] = []
    for no, line in enumerate(_lines(path), start=1):
        line = line.split("#")[0].strip(" \r\n")  # np.genfromtxt: comments, then the line stripped
        if line:
            rows.append((no, line.split(",")))
    if not rows or _is_number(rows[0][1][0]):
        raise ValueError(f"{path}: the first row is not a header (onset_time,offset_time,IPT,note); pass "
                         "Guzheng_Tech99's label CSVs")
    width = len(rows[0][1])
    notes = []
    for no, cols in rows[1:]:
        onset, offset, label = (cols + ["", "", ""])[:3]
        if len(cols) != width or width < 3 or not (_is_finite(onset) and _is_finite(offset)) or label not in TECHNIQUES:
            raise ValueError(f"{path}: row {no} {','.join(cols)[:60]!r} is not onset,offset,technique (two finite "
                             f"times and one of {', '.join(TECHNIQUES)}); pass Guzheng_Tech99's label CSVs")
        notes.append((_cell(onset), _cell(offset), label))
    if not notes:
        raise ValueError(f"{path}: a header and no note; a Guzheng_Tech99 label CSV has one row per note")
    return notes


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").split("\n")  # read in text mode: \r\n and \r are \n
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start}); pass Guzheng_Tech99's label CSVs") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_finite(text: str) -> bool:
    return _is_number(text) and math.isfinite(float(text))


def clip_offsets(last_onset: float) -> list[float]:
    """The clips' offsets: ``np.arange(0, last + 10, 10)`` less its last value."""
    return np.arange(0, last_onset + CLIP_SECONDS, CLIP_SECONDS).tolist()[:-1]


def clips(path: Path) -> list[tuple[float, str]]:
    """``(offset, reference)`` of every clip of one track's label CSV, in order."""
    notes = read_notes(path)
    onsets = np.asarray([n[0] for n in notes]).astype(np.float32).astype(np.float64)
    out = []
    for offset in clip_offsets(float(notes[-1][0])):
        inside = np.flatnonzero((onsets > offset) & (onsets < offset + CLIP_SECONDS))
        kept = [(f"{float(notes[i][0]):.4f}", f"{float(notes[i][1]):.4f}", TECHNIQUES[notes[i][2]]) for i in inside
                if TECHNIQUES[notes[i][2]] is not None]
        out.append((offset, str(kept) if kept else NO_TECHNIQUE))
    return out


def questions_from_files(files: Mapping[str, Path]) -> list[Question]:
    earlier = sorted(name for name in files if not name.startswith("data/label/test/"))
    return clip_questions(TASK, INSTRUCTION, ((t, clip_of(t), clips(files[label_file(t)])) for t in TEST_TRACKS),
                          first_line=sum(len(clips(files[name])) for name in earlier), seconds=CLIP_SECONDS)


def locate(q: Question, index: AudioIndex) -> str | None:
    """The clip under the audio root: CMI-Bench's tree (its root, ``data/`` or ``data/Guzheng/``) or
    Guzheng_Tech99's own folder (itself or its ``data/``)."""
    key = q.audio_key or ""
    inside = key.removeprefix(AUDIO_PREFIX)  # data/audio/test/<track>.flac
    for candidate in (key, key.removeprefix("data/"), key.removeprefix("data/Guzheng/"), inside, inside.removeprefix("data/")):
        if index.find(candidate):
            return candidate
    return None


register_benchmark(
    name=f"cmi-bench/{TASK}", title="CMI-Bench Guzheng_Tech (Guzheng_Tech99 labels, 10 test tracks, 10 s clips)",
    source=Source("local", unpinned="the user's Guzheng_Tech99 folder holding data/label/<split>/<track>.csv "
                                    "(the toolkit ships no CMI_Guzheng_Tech.jsonl)"),
    licence="Guzheng_Tech99: CC BY-NC-ND 4.0 (ccmusic-database/Guzheng_Tech99)",
    items=94,
    audio="not shipped: pass --audio-dir with the folder holding Guzheng_Tech99's data/audio/test/<track>.flac",
    protocol="mir", answer_format="cmi-bench", prompt="the CMI-Bench instruction of data/Guzheng/sft_guzheng.py",
    parser="MIR guzheng family (musiceval.protocols.mir.metrics.tasks; mir.compat for the toolkit's rules)",
    controls=(), question_files=(*EARLIER_SPLITS, *(label_file(t) for t in TEST_TRACKS)), locate_audio=locate,
    version=GENERATOR_COMMIT[:7], task=TASK,
    verified=f"the rule of data/Guzheng/sft_guzheng.py ({GENERATOR_COMMIT[:7]}); test order, instruction and item "
             "count of the published CMI_Guzheng_Tech.jsonl (CMI-bench 4c15f41) and of MU-LLaMA's and LTU's outputs",
)(questions_from_files)
