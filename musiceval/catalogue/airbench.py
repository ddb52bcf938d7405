"""AIR-Bench chat benchmark, music items (Yang et al., "AIR-Bench: Benchmarking Large Audio-Language
Models via Generative Comprehension", ACL 2024): open-ended questions on MusicCaps clips, answered in
free form and scored by musiceval's LLM judge (docs/judge.md).

Source: huggingface.co/datasets/qyang1021/AIR-Bench-Dataset @ 8fa643aefd1d7248fd55fcf3e7ad22c81bbac1fa
(main, the dataset card's last update; ``Chat/`` was added at d65cbe3 and has not changed since).
Licence CC BY-NC 4.0 (the card); the card lists MusicCaps (CC BY-SA 4.0) as the source of the music
clips. Read: ``Chat/Chat_meta.json`` (2.07 MB on the hub's file list) and the clips of the two music
tasks, ``Chat/<task_name>_<dataset_name>/<path>``:

- ``Chat_meta.json``: a JSON array of ``{"meta_info", "question", "answer_gt", "path", "task_name",
  "dataset_name", "uniq_id"}`` (the fields the repository's ``Inference_Chat.py`` reads; it opens the
  clip at ``<Chat>/<task_name>_<dataset_name>/<path>``); ``meta_info`` is the audio description the
  paper's judge reads (for music, the MusicCaps caption and aspect list);
- the music items are ``task_name`` ``music_QA`` and ``music_generation_analysis_QA`` (the
  repository's ``cal_score.py`` sums these two as its ``music`` category), ``dataset_name``
  ``musiccaps``; the folders are ``Chat/music_QA_musiccaps/`` and
  ``Chat/music_generation_analysis_QA_musiccaps/`` (the hub's tree of ``Chat/``).

Items: 500, counted in the repository's ``Chat_result_modelx.jsonl`` (OFA-Sys/AIR-Bench, what
``Inference_Chat.py`` writes from ``Chat_meta.json``: rows ``uniq_id`` 1300-1799 are the music rows,
between ``sound_generation_QA`` and ``speech_and_sound_QA``). ``Chat_meta.json`` itself and its
sha256 could not be read here: the commit pins its content and the lock records the sha256 of the
file fetched. Item id: ``uniq_id``; group: the clip (several questions ask about one clip).

Prompt: the question as written (``Inference_Chat.py`` asks ``question`` alone). Scoring: the
``judge`` protocol against ``answer_gt`` in its ``rubric`` mode, the run's default for this entry
(``options["judge"]``, written into ``musiceval run``'s ``[judge]`` section unless
``--option judge.mode=...`` says otherwise): the judge reads ``meta_info`` (each item's
``meta["description"]``), the question, the reference and the answer as two assistants, in both
orders, and scores each 1-10, as the paper's GPT-4 judge does (section 3.4; ``score_chat.py``'s
prompt asks for the two scores on one line); ``judge_score`` is the answer's mean over the two
orders, the paper's reported number being the mean of the answer's scores. Where it still differs:
the judge (the paper's is gpt-4-0125-preview, an alias musiceval refuses: a pinned judge is
required) and musiceval's own wording of the prompt (docs/benchmarks.md, docs/judge.md).

A row of ``Chat_meta.json`` that cannot be read as a music item (not an object, no ``task_name``, an
empty question, reference or clip, a repeated ``uniq_id``) is an item without a clip, counted with
its reason in the lock (``missing``), never a crash.
"""
from __future__ import annotations

import fnmatch
import os
import shutil
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from musiceval.catalogue.common import read_json
from musiceval.catalogue.spec import ALL_CONTROLS, AudioIndex, Question, Source, register_benchmark

REVISION = "8fa643aefd1d7248fd55fcf3e7ad22c81bbac1fa"
META = "Chat/Chat_meta.json"
#: the chat tasks of the ``music`` category (``cal_score.py``) and their clip folders under ``Chat/``
MUSIC_TASKS = ("music_QA", "music_generation_analysis_QA")
CLIP_FOLDERS = tuple(f"Chat/{task}_musiccaps/*" for task in MUSIC_TASKS)
#: music items of the chat benchmark (``Chat_result_modelx.jsonl``, uniq_id 1300-1799)
ITEMS = 500


def text_field(row: Mapping[str, Any], key: str) -> str | None:
    value = row.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else None


def unusable_item(qid: str, reason: str, question: str = "") -> Question:
    return Question(id=qid, prompt="", question=question, audio_key=None, meta={"unusable": reason})


def uniq_id(row: Mapping[str, Any]) -> str | None:
    """A row's ``uniq_id`` as the item id (an integer or a non-empty string), else None."""
    uid = row.get("uniq_id")
    return str(uid) if isinstance(uid, (int, str)) and not isinstance(uid, bool) and str(uid).strip() else None


def music_rows(rows: Any, meta: str, tasks: Sequence[str], kind: str) -> Iterator[tuple[int, str, dict | Question]]:
    """``(k, where, row)`` for each row of an AIR-Bench meta file whose ``task_name`` is one of
    ``tasks``, in file order; a row that cannot be told a music item comes as an item without a
    clip (``row`` a :class:`Question` whose ``meta["unusable"]`` says why); other tasks' rows are skipped."""
    if not isinstance(rows, list):
        raise ValueError(f"expected a JSON array of {kind} items, got {type(rows).__name__}")
    for k, row in enumerate(rows):
        where = f"row {k} of {meta}"
        if not isinstance(row, dict):
            yield k, where, unusable_item(f"row{k}", f"{where}: not an object ({type(row).__name__}): cannot tell "
                                                     "whether it is a music item")
        elif not isinstance(row.get("task_name"), str):
            yield k, where, unusable_item(f"row{k}", f"{where}: no task_name: cannot tell whether it is a music item")
        elif row["task_name"] in tasks:
            yield k, where, row


def read_rows(rows: Any) -> list[Question]:
    """The music items of ``Chat_meta.json``'s rows, in file order; a row that cannot be read is an
    item without a clip whose ``meta["unusable"]`` says why."""
    out: list[Question] = []
    seen: set[str] = set()
    for k, where, row in music_rows(rows, META, MUSIC_TASKS, "chat"):
        if isinstance(row, Question):
            out.append(row)
            continue
        task = row["task_name"]
        qid = uniq_id(row) or f"row{k}"
        question, reference, clip = text_field(row, "question"), text_field(row, "answer_gt"), text_field(row, "path")
        dataset = text_field(row, "dataset_name")
        problem = ("uniq_id is missing (or not an integer or a string)" if qid == f"row{k}" else
                   f"uniq_id {qid} repeats an earlier row" if qid in seen else
                   "question is missing or empty" if question is None else
                   "answer_gt (the reference) is missing or empty" if reference is None else
                   "path (the clip) is missing or empty" if clip is None else
                   "dataset_name is missing or empty" if dataset is None else None)
        if problem is not None:
            qid = qid if qid not in seen else f"row{k}"
            seen.add(qid)  # a later row with the same uniq_id is a repeat, never a second item of that id
            out.append(unusable_item(qid, f"{where} ({task}): {problem}", question or ""))
            continue
        seen.add(qid)
        description = text_field(row, "meta_info")  # the audio in words: what the rubric judge reads (docs/judge.md)
        out.append(Question(id=qid, prompt=question, question=question, audio_key=f"{task}_{dataset}/{clip}",
                            reference=reference, group=Path(clip).stem,
                            meta={"task": task, "dataset": dataset, **({"description": description} if description else {})}))
    return out


def link_clips(files: Mapping[str, Path], directory: Path, part: str, folders: tuple[str, ...]) -> dict[str, Path]:
    """The fetched clips of ``folders`` (allow patterns ``<part>/<folder>/*``) under
    ``<prepared>/audio/<folder>/`` (linked to the hub cache's file where the disk allows, else
    copied): the layout :func:`find_clip` reads. AIR-Bench's chat and foundation entries share it."""
    out = directory / "audio"
    for name, path in files.items():
        if not any(fnmatch.fnmatchcase(name, folder) for folder in folders):
            continue
        target = out / name.removeprefix(f"{part}/")
        source = Path(path).resolve()
        if target.is_file() and target.stat().st_size == source.stat().st_size:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copyfile(source, target)
    return dict(files)


def find_clip(q: Question, index: AudioIndex, part: str) -> str | None:
    """``<task>_<dataset>/<path>`` under the audio root (or under its ``<part>/``: the dataset's own
    folder passed as ``--audio-dir``), else the clip's file name anywhere under it."""
    key = q.audio_key or ""
    return index.find(key) or index.find(f"{part}/{key}") or index.by_basename(Path(key).name)


def dataset_part(part: str, meta: str, folders: Sequence[str]) -> dict[str, Any]:
    """The entry fields one part of the dataset (``Chat``, ``Foundation``) gives an AIR-Bench entry:
    the hub source at :data:`REVISION` (its meta file and clip folders), the shipped audio, every
    control, and how its clips are linked (:func:`link_clips`) and found (:func:`find_clip`)."""
    return dict(source=Source("hub", repo_id="qyang1021/AIR-Bench-Dataset", files=(meta, *folders), revision=REVISION),
                audio="shipped", controls=ALL_CONTROLS, question_files=(meta,), version=REVISION[:7],
                unpack=lambda files, directory, progress: link_clips(files, directory, part, folders),
                locate_audio=lambda q, index: find_clip(q, index, part))


@register_benchmark(
    name="airbench-chat-music", title="AIR-Bench chat, music items (open-ended, LLM judge)",
    licence="CC BY-NC 4.0 (dataset card); clips from MusicCaps (CC BY-SA 4.0)", items=ITEMS,
    protocol="judge", answer_format="musiceval-freeform", prompt="the question as written (Inference_Chat.py)",
    parser="none: the [judge] scores each answer and answer_gt 1-10 with meta_info, both orders (mode rubric, "
           "AIR-Bench's rule; musiceval's wording and a pinned judge, not gpt-4-0125-preview)",
    options={"judge": {"mode": "rubric"}}, **dataset_part("Chat", META, CLIP_FOLDERS),
    verified="fields and the music task names from OFA-Sys/AIR-Bench Inference_Chat.py, cal_score.py and "
             "Chat_result_modelx.jsonl (500 music rows); revision, folders and licence from the hub pages; "
             "Chat_meta.json's sha256 not read here",
)
def questions(files: Mapping[str, Path]) -> list[Question]:
    return read_rows(read_json(files[META], "AIR-Bench Chat_meta.json"))
