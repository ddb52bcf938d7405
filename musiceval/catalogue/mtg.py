"""CMI-Bench's four MTG-Jamendo tasks (MTG_genre, MTG_emotion, MTG_instrument, MTG_top50tags) prepared
from the user's mtg-jamendo-dataset split files, as the toolkit builds ``CMI_MTG_<task>.jsonl``, which it
does not ship.

Source: the split file of MTG-Jamendo's split 0 the user has (github.com/MTG/mtg-jamendo-dataset,
``data/splits/split-0/autotagging_<kind>-test.tsv`` with ``<kind>`` ``genre``, ``moodtheme``,
``instrument`` or ``top50tags``: a header ``TRACK_ID ARTIST_ID ALBUM_ID PATH DURATION TAGS``, then one
tab-separated row per track, its tags from the sixth column on, each ``<category>---<tag>``); pass it as
``--questions`` and the folder of the ``audio-low`` clips (``00/`` .. ``99/``, ``<track>.low.mp3``, as
the toolkit's ``data/MTG/download_mtg.sh`` fetches them) as ``--audio-dir``. The rule restated from
nicolaus625/CMI-bench ``data/MTG/sft_genre.py``, ``sft_emotion.py``, ``sft_instrument.py`` and
``sft_tags.py`` (stored at e058384):

- the benchmark asks the test split only (``autotagging_<kind>-test.tsv``); the generators write it
  first into ``CMI_MTG_<task>.jsonl``, then training and validation, so the test row ``k`` (0-based,
  header not counted) is line ``k`` of that file;
- each line is stripped of surrounding whitespace and split on tabs; column 3 (0-based) is the track
  path, columns 5 onward its tags;
- the reference is the tags with everything up to the last ``---`` removed, sorted (Python's string
  order), joined by ", ";
- the clip is ``data/MTG/audio-low/`` plus the path with its last four characters (``.mp3``) replaced
  by ``.low.mp3``, seconds 0 to 30;
- the instruction, per task (:data:`TASKS`): "Please provide the genre tag(s) of given audio.",
  "... emotion ...", "... instrument ...", and for top-50 "Please provide the music tags of given
  audio? This may include but not limited to instruments, emotions and genres" (as written, no full stop).

Item ids are ``<line>|data/MTG/audio-low/<path>.low.mp3``, as the other CMI-Bench entries'. A row that
is not a track (fewer than six columns, a path that does not end in ``.mp3``, a tag without ``---``)
is refused with its row number. A tag outside the task's vocabulary
(:data:`musiceval.vocab.cmibench.TAG_VOCABULARIES`) is refused too, though the generators keep every
tag: the tagging scorer has no column for it, so it would vanish from the score unsaid; in split 0 of
the real files every tag is in the vocabulary (the references of both published outputs, MU-LLaMA's
and LTU's, use exactly the 87, 56 and 40 tags), so only another file (another kind, another split) is
refused. Scoring: the ``tagging`` family.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from musiceval.catalogue.spec import AudioIndex, Question, Source, register_benchmark
from musiceval.data.benchmarks import CMI_BENCH_TEST_ITEMS
from musiceval.vocab.cmibench import TAG_VOCABULARIES

#: the toolkit's generators, at the commit they were read
GENERATORS_COMMIT = "e058384678087b3daf0c78934463ea7894791b85"
AUDIO_PREFIX = "data/MTG/audio-low/"
#: columns before the tags: TRACK_ID, ARTIST_ID, ALBUM_ID, PATH, DURATION
PATH_COLUMN, FIRST_TAG_COLUMN = 3, 5


@dataclass(frozen=True)
class MtgTask:
    #: ``<kind>`` of ``autotagging_<kind>-test.tsv``
    kind: str
    #: the generator that writes ``CMI_MTG_<task>.jsonl``
    generator: str
    instruction: str
    title: str

    @property
    def file(self) -> str:
        return f"autotagging_{self.kind}-test.tsv"


TASKS: dict[str, MtgTask] = {
    "MTG_genre": MtgTask("genre", "sft_genre.py", "Please provide the genre tag(s) of given audio.", "genre tags"),
    "MTG_emotion": MtgTask("moodtheme", "sft_emotion.py", "Please provide the emotion tag(s) of given audio.",
                           "mood/theme tags"),
    "MTG_instrument": MtgTask("instrument", "sft_instrument.py", "Please provide the instrument tag(s) of given audio.",
                              "instrument tags"),
    "MTG_top50tags": MtgTask("top50tags", "sft_tags.py", "Please provide the music tags of given audio? This may include "
                             "but not limited to instruments, emotions and genres", "top-50 tags"),
}


def clip_of(path: str) -> str:
    """The toolkit's clip path of a track path: ``14/214.mp3`` -> ``data/MTG/audio-low/14/214.low.mp3``."""
    return f"{AUDIO_PREFIX}{path[:-4]}.low.mp3"


def read_split(path: Path, task: str) -> list[tuple[str, list[str]]]:
    """``(track path, tags without their category)`` of every data row of ``path``, in file order;
    ValueError names the first row (1-based, the header is row 1) that is not a track of ``task``."""
    spec, vocab = TASKS[task], set(TAG_VOCABULARIES[task])
    with open(path, encoding="utf-8") as fh:  # lines as the generators read them (universal newlines)
        lines = list(fh)
    if not lines or not lines[0].startswith("TRACK_ID"):
        raise ValueError(f"{path}: expected a header starting TRACK_ID (mtg-jamendo-dataset's "
                         f"data/splits/split-0/{spec.file}), got {lines[0].strip()[:60] if lines else 'an empty file'!r}")
    rows = []
    for no, line in enumerate(lines[1:], start=2):
        cols = line.strip().split("\t")
        if len(cols) <= FIRST_TAG_COLUMN or not cols[PATH_COLUMN].endswith(".mp3"):
            raise ValueError(f"{path}: row {no} has {len(cols)} columns or no .mp3 path in column 4; expected "
                             f"TRACK_ID, ARTIST_ID, ALBUM_ID, PATH, DURATION and at least one tag ({spec.file})")
        bad = [t for t in cols[FIRST_TAG_COLUMN:] if "---" not in t]
        if bad:
            raise ValueError(f"{path}: row {no}: tag {bad[0]!r} is not <category>---<tag>")
        tags = [t.split("---")[-1] for t in cols[FIRST_TAG_COLUMN:]]
        outside = [t for t in tags if t not in vocab]
        if outside:
            raise ValueError(f"{path}: row {no}: tag {outside[0]!r} is not one of {task}'s {len(vocab)} tags: pass "
                             f"split 0's {spec.file} (mtg-jamendo-dataset), not another kind or split")
        rows.append((cols[PATH_COLUMN], tags))
    return rows


def questions_from_split(path: Path, task: str) -> list[Question]:
    instruction = TASKS[task].instruction
    out = []
    for line, (track, tags) in enumerate(read_split(path, task)):
        audio = clip_of(track)
        out.append(Question(id=f"{line}|{audio}", prompt=instruction, question=instruction, audio_key=audio,
                            reference=", ".join(sorted(tags)), group=audio, audio_start=0.0, audio_end=30.0,
                            meta={"task": task, "line": line, "path": track}))
    return out


def locate(q: Question, index: AudioIndex) -> str | None:
    key = q.audio_key or ""
    low = key.removeprefix(AUDIO_PREFIX)
    return index.find(low) or index.find(key) or index.find(f"audio-low/{low}")


def _register(task: str, spec: MtgTask) -> None:
    def questions(files: Mapping[str, Path]) -> list[Question]:
        return questions_from_split(files[spec.file], task)

    items = CMI_BENCH_TEST_ITEMS.get(task)
    register_benchmark(
        name=f"cmi-bench/{task}", title=f"CMI-Bench {task} (MTG-Jamendo {spec.title}, split 0, test)",
        source=Source("local", unpinned=f"the user's mtg-jamendo-dataset data/splits/split-0/{spec.file} "
                                        f"(the toolkit ships no CMI_{task}.jsonl)"),
        licence="MTG-Jamendo: metadata CC BY-NC-SA 4.0, audio each track's Creative Commons licence "
                "(mtg-jamendo-dataset README)",
        items=items,
        audio="not shipped: pass --audio-dir with the folder holding MTG-Jamendo's audio-low clips (00/ .. 99/)",
        protocol="mir", answer_format="cmi-bench", prompt=f"the CMI-Bench instruction: {spec.instruction!r}",
        parser="MIR tagging family (musiceval.protocols.mir.metrics.tasks; mir.compat for the toolkit's rules)",
        controls=(), question_files=(spec.file,), locate_audio=locate, version=GENERATORS_COMMIT[:7], task=task,
        verified=f"the rule of data/MTG/{spec.generator} ({GENERATORS_COMMIT[:7]}); "
                 + (f"the test count {items:,} is the records of both published outputs (MU-LLaMA, LTU)" if items else
                    "no published output to count the test split: the file's own row count is used"),
    )(questions)


for _task, _spec in TASKS.items():
    _register(_task, _spec)
