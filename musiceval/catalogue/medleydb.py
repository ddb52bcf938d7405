"""CMI-Bench's MedleyDB task (melody extraction) prepared from the user's MedleyDB-Melody files, as the
toolkit builds ``CMI_MedleyDB.jsonl``, which it does not ship.

Source: the user's MedleyDB-Melody (Bittner et al. 2014; the ``melody2/<track>_MELODY2.csv`` files:
one ``time,Hz`` row per frame, 0 Hz unvoiced); pass the folder holding ``melody2/`` as ``--questions``
(the 26 test tracks' CSVs are read from it, each hashed into the lock) and the folder holding the
mixes (``audio/<track>_MIX.wav``, or CMI-Bench's ``data/`` tree) as ``--audio-dir``. The rule restated
from nicolaus625/CMI-bench ``data/MedleyDB/sft_medleydb.py`` (stored at 4c7d14c):

- the benchmark asks the 26 tracks of the generator's ``test`` split (:data:`TEST_TRACKS`, in its
  order; ``MatthewEntwistle_DontYouEver`` is commented out there and is not asked);
- each CSV is read as float32 (``torch.Tensor``); the MIDI note of a frame is
  ``round(12 * log2(f / 440) + 69)`` for ``f != 0``, else 0, in float32, rounding half to even;
- the clips are 10 s from 0: the offsets are ``torch.arange(0, last time + 10, 10)`` (the last row's
  time, the sum in float32, the count ``ceil`` of it over 10), and every offset but the last is a clip
  (the generator zips the offsets with the intervals between consecutive offsets);
- a clip's reference is the frames with ``offset < time < offset + 10`` (strict both sides, in float32),
  written as the Python ``str`` of a list of ``("%.4f" time, int MIDI)`` tuples, ``[]`` when none;
- the instruction is "please estimate the pitch sequnnce in MIDI number with the timestep of the given
  audio. The output format should be a list of (float:time (second), int:MIDI number) tuples." (as
  written, typo included), the clip ``data/MedleyDB/MedleyDB-Melody/audio/<track>_MIX.wav``,
  ``audio_start`` the offset and ``audio_end`` the offset plus 10.

Item ids are ``<line>|data/MedleyDB/MedleyDB-Melody/audio/<track>_MIX.wav`` with the line the clip has
in ``CMI_MedleyDB.jsonl`` (the tracks in order, each track's clips in order), as the other CMI-Bench
entries' are; the clips of a track share its group. A CSV with fewer than two rows (the generator's
indexing fails on it), a row that is not two finite numbers, or a negative frequency (the generator's
``int`` of a NaN note fails) is refused with its file and row. No published output of this task is
stored here, so the item count is the clips the files give. Scoring: the ``melody`` family.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping

import numpy as np

from musiceval.catalogue.clip_questions import clip_questions
from musiceval.catalogue.spec import AudioIndex, Question, Source, register_benchmark

#: the toolkit's generator, at the commit it was read
GENERATOR_COMMIT = "4c7d14c5a7866291bcf3d3b47fe73c6d1c9bb936"
TASK = "MedleyDB"
AUDIO_PREFIX = "data/MedleyDB/MedleyDB-Melody/audio/"
CLIP_SECONDS = 10.0
INSTRUCTION = ("please estimate the pitch sequnnce in MIDI number with the timestep of the given audio. The output "
               "format should be a list of (float:time (second), int:MIDI number) tuples.")
#: ``DATA_SPLIT["test"]`` of ``sft_medleydb.py``, in its order
TEST_TRACKS = (
    "AClassicEducation_NightOwl", "Auctioneer_OurFutureFaces", "CelestialShore_DieForUs",
    "ChrisJacoby_BoothShotLincoln", "ChrisJacoby_PigsFoot", "Creepoid_OldTree", "Debussy_LenfantProdigue",
    "MatthewEntwistle_FairerHopes", "MatthewEntwistle_ImpressionsOfSaturn", "MatthewEntwistle_Lontano",
    "MatthewEntwistle_TheArch", "MatthewEntwistle_TheFlaxenField", "Mozart_DiesBildnis", "MusicDelta_FusionJazz",
    "MusicDelta_Gospel", "MusicDelta_Pachelbel", "MusicDelta_SwingJazz", "Phoenix_BrokenPledgeChicagoReel",
    "Phoenix_ColliersDaughter", "Phoenix_ElzicsFarewell", "Phoenix_LarkOnTheStrandDrummondCastle",
    "Phoenix_ScotchMorris", "Phoenix_SeanCaughlinsTheScartaglen", "PortStWillow_StayEven", "Schubert_Erstarrung",
    "StrandOfOaks_Spacestation",
)


def csv_name(track: str) -> str:
    return f"melody2/{track}_MELODY2.csv"


def clip_of(track: str) -> str:
    return f"{AUDIO_PREFIX}{track}_MIX.wav"


def read_melody(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(times, Hz)`` of a ``_MELODY2.csv`` as float32 arrays; ValueError names the file and the first
    row (1-based) that is not ``time,Hz`` with finite numbers and a frequency of 0 or more."""
    rows = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start}); pass MedleyDB-Melody's melody2 CSVs") from None
    for no, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue  # np.genfromtxt skips blank lines
        cols = line.strip().split(",")
        try:
            t, f = (float(c) for c in cols) if len(cols) == 2 else (math.nan, math.nan)
        except ValueError:
            t = f = math.nan
        if not (math.isfinite(t) and math.isfinite(f)) or f < 0:
            raise ValueError(f"{path}: row {no} {line.strip()[:60]!r} is not time,Hz (two finite numbers, Hz 0 "
                             "or more); pass MedleyDB-Melody's melody2 CSVs")
        rows.append((t, f))
    if len(rows) < 2:
        raise ValueError(f"{path}: {len(rows)} rows; a MedleyDB-Melody melody2 CSV has one per frame (the "
                         "generator cannot read fewer than two)")
    data = np.asarray(rows, dtype=np.float64).astype(np.float32)
    return data[:, 0], data[:, 1]


def hz_to_midi(freqs: np.ndarray) -> np.ndarray:
    """The generator's ``hz_to_midi_fn`` in float32: ``round(12 * log2(f / 440) + 69)``, 0 where f is 0."""
    notes = np.zeros_like(freqs, dtype=np.float32)
    voiced = freqs != 0
    notes[voiced] = np.float32(12) * np.log2(freqs[voiced] / np.float32(440)) + np.float32(69)
    return np.round(notes)


def clip_offsets(last_time: np.float32) -> list[float]:
    """The clips' offsets: ``torch.arange(0, last + 10, 10)`` less its last value."""
    end = np.float32(last_time) + np.float32(CLIP_SECONDS)
    count = max(math.ceil(float(end) / CLIP_SECONDS), 0)
    return [k * CLIP_SECONDS for k in range(max(count - 1, 0))]


def clips(path: Path) -> list[tuple[float, str]]:
    """``(offset, reference)`` of every clip of one track's CSV, in order."""
    times, freqs = read_melody(path)
    notes = hz_to_midi(freqs)
    out = []
    for offset in clip_offsets(times[-1]):
        inside = (times > np.float32(offset)) & (times < np.float32(offset + CLIP_SECONDS))
        out.append((offset, str([(f"{float(t):.4f}", int(m)) for t, m in zip(times[inside], notes[inside])])))
    return out


def questions_from_files(files: Mapping[str, Path]) -> list[Question]:
    return clip_questions(TASK, INSTRUCTION, ((t, clip_of(t), clips(files[csv_name(t)])) for t in TEST_TRACKS),
                          seconds=CLIP_SECONDS)


def locate(q: Question, index: AudioIndex) -> str | None:
    key = q.audio_key or ""
    mix = key.removeprefix(AUDIO_PREFIX)
    return index.find(key) or index.find(f"audio/{mix}") or index.find(mix)


register_benchmark(
    name=f"cmi-bench/{TASK}", title="CMI-Bench MedleyDB (MedleyDB-Melody melody2, 26 test tracks, 10 s clips)",
    source=Source("local", unpinned="the user's MedleyDB-Melody folder holding melody2/<track>_MELODY2.csv "
                                    "(the toolkit ships no CMI_MedleyDB.jsonl)"),
    licence="MedleyDB: CC BY-NC-SA 4.0 (MedleyDB-Melody on Zenodo)",
    items=None,
    audio="not shipped: pass --audio-dir with the folder holding MedleyDB-Melody's audio/<track>_MIX.wav",
    protocol="mir", answer_format="cmi-bench", prompt=f"the CMI-Bench instruction: {INSTRUCTION!r}",
    parser="MIR melody family (musiceval.protocols.mir.metrics.tasks; mir.compat for the toolkit's rules)",
    controls=(), question_files=tuple(csv_name(t) for t in TEST_TRACKS), locate_audio=locate,
    version=GENERATOR_COMMIT[:7], task=TASK,
    verified=f"the rule of data/MedleyDB/sft_medleydb.py ({GENERATOR_COMMIT[:7]}); no published output to count "
             "the clips: the files' own clip count is used",
)(questions_from_files)
