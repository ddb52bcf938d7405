"""AIR-Bench foundation benchmark, music items (Yang et al., "AIR-Bench: Benchmarking Large
Audio-Language Models via Generative Comprehension", ACL 2024): single-choice questions on music
clips, asked with the repository's prompt and read with its letter rule.

Source: huggingface.co/datasets/qyang1021/AIR-Bench-Dataset @ 8fa643aefd1d7248fd55fcf3e7ad22c81bbac1fa
(main, the dataset card's last update; ``Foundation/`` last changed at 7766a6f, "Foundation-4").
Licence CC BY-NC 4.0 (the card; each source set keeps its own terms, the card says). Read:
``Foundation/Foundation_meta.json`` and the clips of the music tasks,
``Foundation/<task_name>_<dataset_name>/<path>``:

- ``Foundation_meta.json``: a JSON array of ``{"question", "choice_a", "choice_b", "choice_c",
  "choice_d", "answer_gt", "path", "task_name", "dataset_name", "uniq_id"}`` (the fields the
  repository's ``Inference_Foundation.py`` @ d5c1bdf reads and writes back; ``choice_c`` and
  ``choice_d`` are read with ``.get``, so an item may have two or three options);
- the music tasks (:data:`MUSIC_TASKS`, spelled as the dataset spells them, ``Classfication``
  included): instruments (NSynth, MTG-Jamendo), genre (FMA, MTG-Jamendo), MIDI pitch and MIDI
  velocity (NSynth), music QA (Music-AVQA) and mood (MTG-Jamendo): eight clip folders. The
  folders ``Music_Genre_Recognition_fma`` and ``Music_Midi_Pitch_Analysis_nsynth`` were seen on the
  hub's pages here; the other six names come from evalscope's AIR-Bench documentation, so every
  folder of a music task is fetched (``Foundation/<task>_*``).

Items: not verified here, so the file's own count of music rows is the coverage denominator (and
recorded). evalscope's documentation counts 6,313 music items in its copy (its ModelScope
conversion, not this file); ``Foundation_meta.json`` and its sha256 could not be read here: the
commit pins its content, and the lock records the sha256 of the file fetched. Item id:
``uniq_id``; group: the clip.

Prompt: exactly what ``Inference_Foundation.py`` writes (:func:`foundation_prompt`), options in the
file's order (never shuffled), an absent option printed as ``None`` as the script prints it.
Parser: the ``airbench-foundation`` matcher (``score_foundation.py``'s letter rule; how it differs
from the script's accuracy: :mod:`musiceval.metrics.airbench_matcher`, docs/benchmarks.md).

A row of ``Foundation_meta.json`` that cannot be read as a music item (not an object, no
``task_name``, no ``uniq_id`` or a repeated one, an empty question or clip, fewer than two
options, a ``choice_d`` without a ``choice_c``, repeated options, an ``answer_gt`` that is none of
the options: the row ``score_foundation.py`` stops at) is an item without a clip, counted with its
reason in the lock (``missing``), never a crash.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from musiceval.catalogue.airbench import dataset_part, music_rows, text_field, uniq_id, unusable_item
from musiceval.catalogue.common import LETTERS, PLACEHOLDER_TYPES, read_json
from musiceval.catalogue.spec import Question, register_benchmark

META = "Foundation/Foundation_meta.json"
#: the music tasks of the foundation benchmark, as ``task_name`` spells them
MUSIC_TASKS = ("Music_Instruments_Classfication", "Music_Genre_Recognition", "Music_Midi_Pitch_Analysis",
               "Music_Midi_Velocity_Analysis", "Music_AQA", "Music_Mood_Recognition")
CLIP_FOLDERS = tuple(f"Foundation/{task}_*/*" for task in MUSIC_TASKS)
#: the instruction ``Inference_Foundation.py`` puts before the question
INSTRUCTION = ("Choose the most suitable answer from options A, B, C, and D to respond the question in next line, "
               "you may only choose A or B or C or D.")
CHOICE_KEYS = ("choice_a", "choice_b", "choice_c", "choice_d")


def foundation_prompt(question: str, a: Any, b: Any, c: Any = None, d: Any = None) -> str:
    """The instruction, the question and the four lettered options, as ``Inference_Foundation.py``
    writes them (an absent option is printed ``None``).

    >>> lines = foundation_prompt("Which genre is it?", "rock", "jazz").split("\\n")
    >>> lines[0] == INSTRUCTION, lines[1:]
    (True, ['Which genre is it?', 'A. rock', 'B. jazz', 'C. None', 'D. None'])
    """
    return INSTRUCTION + "\n" + question + "\n" + f"A. {a}\nB. {b}\nC. {c}\nD. {d}"


def _options(row: Mapping[str, Any]) -> tuple[list[Any], str | None]:
    """The row's options as written (``choice_a`` .. the last present one) or why they cannot be read."""
    values = [row.get(key) for key in CHOICE_KEYS]
    for key, value in zip(CHOICE_KEYS, values):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int, float))
                                  or not str(value).strip()):
            return [], f"{key} is not a non-empty text ({value!r})"
    if values[0] is None or values[1] is None:
        return [], "choice_a and choice_b are both needed"
    if values[2] is None and values[3] is not None:
        return [], "choice_d is given without choice_c"
    present = [v for v in values if v is not None]
    texts = [str(v).strip().lower() for v in present]
    if len(set(texts)) != len(texts):
        return [], f"the options repeat ({', '.join(map(str, present))})"
    return present, None


def read_rows(rows: Any) -> list[Question]:
    """The music items of ``Foundation_meta.json``'s rows, in file order; a row that cannot be read
    is an item without a clip whose ``meta["unusable"]`` says why."""
    out: list[Question] = []
    seen: set[str] = set()
    for k, where, row in music_rows(rows, META, MUSIC_TASKS, "foundation"):
        if isinstance(row, Question):
            out.append(row)
            continue
        task = row["task_name"]
        qid = uniq_id(row)
        question = row.get("question") if isinstance(row.get("question"), str) and row["question"].strip() else None
        clip, dataset = text_field(row, "path"), text_field(row, "dataset_name")
        options, bad_options = _options(row)
        answer = row.get("answer_gt")
        index = next((i for i, value in enumerate(options) if value == answer), None)  # score_foundation.py's ==
        problem = ("uniq_id is missing (or not an integer or a string)" if qid is None else
                   f"uniq_id {qid} repeats an earlier row" if qid in seen else
                   "question is missing or empty" if question is None else
                   bad_options if bad_options else
                   "path (the clip) is missing or empty" if clip is None else
                   "dataset_name is missing or empty" if dataset is None else
                   f"answer_gt {answer!r} is none of the options" if index is None else None)
        if problem is not None:
            qid = qid if qid is not None and qid not in seen else f"row{k}"
            seen.add(qid)  # a later row with the same uniq_id is a repeat, never a second item of that id
            out.append(unusable_item(qid, f"{where} ({task}): {problem}", question or ""))
            continue
        seen.add(qid)
        key = f"{task}_{dataset}/{clip}"
        types = [PLACEHOLDER_TYPES[0] if i == index else None for i in range(len(options))]
        rest = iter(PLACEHOLDER_TYPES[1:])
        out.append(Question(id=qid, prompt=foundation_prompt(question, *options), question=question, audio_key=key,
                            choices=tuple(str(v) for v in options), answer=LETTERS[index], group=key,
                            meta={"task": task, "dataset": dataset,
                                  "distractor_types": [t or next(rest) for t in types]}))
    return out


@register_benchmark(
    name="airbench-foundation-music", title="AIR-Bench foundation, music items (single choice)",
    licence="CC BY-NC 4.0 (dataset card, which leaves each source set its own terms)", items=None,
    protocol="choice", answer_format="musiceval-choice",
    prompt="Inference_Foundation.py's instruction, question and A-D options, in the file's order",
    parser="airbench-foundation matcher (score_foundation.py: first character, else the second-to-last; "
           "unanswered counted wrong, no GPT mapping)",
    options={"matcher": "airbench-foundation", "options_as_published": True},
    **dataset_part("Foundation", META, CLIP_FOLDERS),
    verified="fields, prompt and letter rule from OFA-Sys/AIR-Bench Inference_Foundation.py and score_foundation.py "
             "@ d5c1bdf; task names and folders from evalscope's AIR-Bench documentation and the hub pages; "
             "item count and Foundation_meta.json's sha256 not read here",
)
def questions(files: Mapping[str, Path]) -> list[Question]:
    return read_rows(read_json(files[META], "AIR-Bench Foundation_meta.json"))
