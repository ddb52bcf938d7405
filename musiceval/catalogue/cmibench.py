"""CMI-Bench (Ma et al. 2025): MIR annotations rewritten as instructions, one benchmark per task.

Source: github.com/nicolaus625/CMI-bench, one instruction file per task
(``data/<dataset>/CMI_<task>.jsonl``), each pinned to a commit at which the file was stored (the
commits below are full hashes read from the repository index here). Licence CC BY 4.0 (the
instructions); the audio is each underlying dataset's (GiantSteps, GTZAN, NSynth, EMO, Ballroom,
DSing, MusicCaps, Song Describer, VocalSet) and is not shipped: pass the folder that holds
CMI-Bench's ``data/`` tree as ``--audio-dir`` (``audio_path[0]`` is relative to it).
Layout (one JSON object per line): ``instruction``, ``input``, ``output`` (ground truth),
``split`` (list), ``task_type{major,minor}``, ``audio_path[]``, ``audio_start``, ``audio_end``,
``source``, ``other``. Only ``split`` containing ``test`` is asked; item counts are the test
records at 4c15f41 (:data:`musiceval.data.benchmarks.CMI_BENCH_TEST_ITEMS`, which the coverage gate reads too).

Prompt: the ``instruction`` as written; answers are written as the toolkit's outputs
(``<model>_<task>.jsonl``: ``question, response, correct_answer, audioid, other``) and scored by
the MIR protocol (``mir.compat`` chooses the toolkit's rules or the corrected ones). The toolkit's
outputs carry no condition, so no control is asked: the listening gate uses the answer
permutation. MTT is built from the user's MagnaTagATune annotations (:mod:`musiceval.catalogue.mtt`),
the four MTG_* tasks from the user's mtg-jamendo-dataset split files (:mod:`musiceval.catalogue.mtg`),
MedleyDB from the user's MedleyDB-Melody ``melody2`` CSVs (:mod:`musiceval.catalogue.medleydb`) and
Guzheng_Tech from the user's Guzheng_Tech99 label files (:mod:`musiceval.catalogue.guzheng`): the
repository ships their generators, not their instruction files.

The development branch (commit 35235cb, :data:`DEVELOPMENT_FILES`) adds nine tasks whose instruction
files it ships, each with a README and its generator: Arab-Andalusian nawba, tab, form and mizan
(``data/arab_andalusian/``, one item per annotated section of a recording, ``audio_start`` and
``audio_end`` the section), Lyra instrument, genre, place and dance (``data/lyra/``, Greek
traditional and folk music; the file holds Lyra's training and test splits, the test split is asked;
the clips are YouTube excerpts the user cuts with its ``download_audio.py``) and SongFormBench
(``data/songformer/``, song structure, whole tracks). Those files are 0.4 to 2.7 million characters
each and could not be read whole here, so their sha256 is not pinned (:data:`UNREAD_DIGEST`, shown by
``musiceval data list``; the lock records the sha256 of the file fetched) and their item count is
the test records of the fetched file. Lyra's ``CMI_Lyra_<task>_test_available.jsonl`` (the test rows whose
clips the authors could download, ``sft_lyra.py --split test --available-only``; 0.23 to 0.47 million
characters, likewise unread whole) are the entries ``cmi-bench/Lyra_<task>_test_available``
(:data:`VARIANT_FILES`): task ``Lyra_<task>``, scored by its rules, variant ``test_available``, answers
written ``<model>_Lyra_<task>_test_available.jsonl`` as the toolkit names them; ``cmi-bench`` alone leaves
them out (the task's own entry asks their items). Scoring: :mod:`musiceval.protocols.mir.metrics.development_branch`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

from musiceval.data.benchmarks import CMI_BENCH_DEFAULTS, CMI_BENCH_TEST_ITEMS
from musiceval.data.cmibench_names import TASK_VARIANTS
from musiceval.catalogue.spec import AudioIndex, Question, Source, register_benchmark

REPO = "https://raw.githubusercontent.com/nicolaus625/CMI-bench"
#: task -> (path in the repository, commit at which it was read)
FILES = {
    "GS_key": ("data/GS-key/CMI_GS_key.jsonl", "a37cddf67ae2983b038e8cb425ca6ee47c0cdd5f"),
    "GTZAN": ("data/GTZAN/CMI_GTZAN.jsonl", "630f1edc52a99f3d96d3331cd423fe8a7464233c"),
    "Nsynth_instrument": ("data/NSynth/CMI_Nsynth_instrument.jsonl", "5b20b2556f05f8eb8aad74f036ccf097bf1a805f"),
    "Nsynth_pitch": ("data/NSynth/CMI_Nsynth_pitch.jsonl", "7dd61d9ade455195c667205437e813afdcb58d96"),
    "EMO_arousal": ("data/EMO/CMI_EMO_arousal.jsonl", "5ca77d93ff496cf5d5e4b036c3cbe27ec88d0361"),
    "EMO_valence": ("data/EMO/CMI_EMO_valence.jsonl", "002ea3ed34a33b17def7340cc7b435ad15cf8825"),
    "ballroom_beat": ("data/Beat-Transformer/CMI_ballroom_beat.jsonl", "172c70bb797188ec6346e6687a9d081996096da1"),
    "ballroom_downbeat": ("data/Beat-Transformer/CMI_ballroom_downbeat.jsonl", "172c70bb797188ec6346e6687a9d081996096da1"),
    "gtzan_beat": ("data/Beat-Transformer/CMI_gtzan_beat.jsonl", "172c70bb797188ec6346e6687a9d081996096da1"),
    "gtzan_downbeat": ("data/Beat-Transformer/CMI_gtzan_downbeat.jsonl", "172c70bb797188ec6346e6687a9d081996096da1"),
    "DSing": ("data/DSing/CMI_DSing.jsonl", "c5f5f7c538b56101550154d68716d3ee22a4f3ad"),
    "MusicCaps": ("data/MusicCaps/CMI_MusicCaps.jsonl", "88a6f0883777480f95e74a63599b34024ac1734f"),
    "SDD": ("data/SDD/CMI_SDD.jsonl", "9ce0e1f5b6a79d1b9731967a2f1c366bac316f68"),
    "VocalSet_tech": ("data/VocalSet/CMI_VocalSet_tech.jsonl", "5b20b2556f05f8eb8aad74f036ccf097bf1a805f"),
}
#: the development-branch commit (its README: "This branch extends the original ISMIR release")
DEVELOPMENT_COMMIT = "35235cb0394c492c39eb3ae6adbb504c7fd4b34c"
#: task -> (path in the repository, commit) of the development branch's instruction files
DEVELOPMENT_FILES = {
    **{f"ArabAndalusian_{t}": (f"data/arab_andalusian/CMI_ArabAndalusian_{t}.jsonl", DEVELOPMENT_COMMIT)
       for t in ("nawba", "tab", "form", "mizan")},
    **{f"Lyra_{t}": (f"data/lyra/CMI_Lyra_{t}.jsonl", DEVELOPMENT_COMMIT) for t in ("instrument", "genre", "place", "dance")},
    "SongFormBench": ("data/songformer/CMI_SongFormBench.jsonl", DEVELOPMENT_COMMIT),
}
#: (task, variant) -> (path in the repository, commit) of a development-branch task's variant file,
#: ``CMI_<task>_<variant>.jsonl`` beside the task's own (data/lyra at 35235cb)
VARIANT_FILES = {
    (task, variant): (DEVELOPMENT_FILES[task][0].replace(".jsonl", f"_{variant}.jsonl"), DEVELOPMENT_COMMIT)
    for variant, tasks in TASK_VARIANTS.items() for task in tasks
}
#: variant -> what its file holds, for the entry's title
VARIANT_TITLES = {"test_available": "test clips the authors could download"}
#: the sha256 of a pinned file that could not be read whole here
UNREAD_DIGEST = None
#: the audio each development-branch dataset needs, where the generator's README says it comes from
DEVELOPMENT_AUDIO = {
    "ArabAndalusian": "not shipped: the Arab-Andalusian dataset's documents/<mbid>/<mbid>.mp3 (data/arab_andalusian/"
                      "README.md); pass --audio-dir with the folder holding data/arab_andalusian/documents",
    "Lyra": "not shipped: Lyra's test clips cut from YouTube (data/lyra/download_audio.py), data/lyra/audio/<id>.wav; "
            "pass --audio-dir with the folder holding them",
    "SongFormBench": "not shipped: SongFormBench's audios/ (data/songformer/README.md); pass --audio-dir with the "
                     "folder holding data/songformer/data/audios",
}


def locate(q: Question, index: AudioIndex) -> str | None:
    key = q.audio_key or ""
    return index.find(key) or index.find(key.removeprefix("data/")) or index.by_basename(Path(key).name)


def _reader(task: str, name: str):
    def questions(files: Mapping[str, Path]) -> list[Question]:
        out = []
        with open(files[name], encoding="utf-8") as fh:
            for no, line in enumerate(fh):
                if not line.strip():
                    continue
                row = json.loads(line)
                split = row.get("split") or []
                if "test" not in (split if isinstance(split, list) else [split]):
                    continue
                audio = row.get("audio_path") or []
                audio = audio[0] if isinstance(audio, list) and audio else (audio or None)
                end = row.get("audio_end")
                out.append(Question(
                    id=f"{no}|{audio}", prompt=row["instruction"], question=row["instruction"], audio_key=audio,
                    reference=str(row.get("output", "")), group=str(audio),
                    audio_start=float(row["audio_start"]) if row.get("audio_start") is not None else None,
                    audio_end=float(end) if end is not None and float(end) >= 0 else None,
                    meta={"task": task, "line": no, "source": row.get("source", ""), "other": row.get("other")}))
        return out

    return questions


def _register() -> None:
    for task, (path, commit) in FILES.items():
        name = Path(path).name
        register_benchmark(
            name=f"cmi-bench/{task}", title=f"CMI-Bench {task} (test split)",
            source=Source("url", urls=(f"{REPO}/{commit}/{path}",), revision=commit),
            licence="CC BY 4.0 (instructions); audio: the underlying dataset's licence",
            items=CMI_BENCH_TEST_ITEMS[task],
            audio="not shipped: pass --audio-dir with the folder holding CMI-Bench's data/ tree",
            protocol="mir", answer_format="cmi-bench", prompt="the CMI-Bench instruction as written",
            parser=f"MIR parser of {task} (musiceval.protocols.mir.metrics.tasks; mir.compat for the toolkit's rules)", controls=(),
            question_files=(name,), locate_audio=locate, version=commit[:7], task=task,
            options=dict(CMI_BENCH_DEFAULTS.get(task, {})),
            verified=f"columns and ids vs shared/data/cmi-bench/instructions/{name} (4c15f41)",
        )(_reader(task, name))
    for task, (path, commit) in DEVELOPMENT_FILES.items():
        _register_development(task, path, commit)
    for (task, variant), (path, commit) in VARIANT_FILES.items():
        _register_development(task, path, commit, variant)


def _register_development(task: str, path: str, commit: str, variant: str = "") -> None:
    """The entry of a development-branch instruction file: a task's own, or its ``variant``'s."""
    name, dataset = Path(path).name, task.split("_")[0]
    read = (f"columns, split and ids vs the first rows of {path} at {commit[:7]} (every row read there in the test "
            f"split, the fields of CMI_{task}.jsonl) and sft_lyra.py's --available-only rule" if variant else
            f"columns and ids vs the first rows of {path} and its generator at {commit[:7]}")
    register_benchmark(
        name=f"cmi-bench/{task}{f'_{variant}' if variant else ''}",
        title=f"CMI-Bench {task}{f', {VARIANT_TITLES[variant]}' if variant else ''} (development branch, test split)",
        source=Source("url", urls=(f"{REPO}/{commit}/{path}",), revision=commit),
        licence=f"CC BY 4.0 (instructions); audio: the {dataset} dataset's licence (not verified here)",
        items=None, audio=DEVELOPMENT_AUDIO[dataset],
        protocol="mir", answer_format="cmi-bench", prompt="the CMI-Bench instruction as written",
        parser=f"MIR parser of {task} (musiceval.protocols.mir.metrics.development_branch; mir.compat for "
               "evaluate.py's rules at 35235cb)", controls=(),
        question_files=(name,), locate_audio=locate, version=commit[:7], task=task, variant=variant,
        digests={name: UNREAD_DIGEST},
        verified=f"{read}; {name}'s sha256 and test-split count not read here (the file could not be read whole)",
    )(_reader(task, name))


_register()
