"""MuChoMusic (Weck et al., ISMIR 2024): 1,187 multiple-choice questions on 644 tracks.

Source: Zenodo record 12709974, ``muchomusic.csv`` (the download the upstream README gives:
``wget -P data https://zenodo.org/record/12709974/files/muchomusic.csv``, mulab-mir/muchomusic
README @ 0700c27; also huggingface.co/datasets/mulab-mir/muchomusic). Licence CC BY-SA 4.0.
Columns read (``load_questions_from_csv`` in muchomusic_eval/utils.py @ 34f545b): ``question``,
``correct_answer``, ``distractor_1_answer`` .. ``distractor_3_answer``, ``music_knowledge``,
``music_reasoning``, ``genre``, ``dataset`` (``sdd`` or ``musiccaps``), ``dataset_identifier``.

Audio is not shipped (MusicCaps clips come from YouTube, Song Describer from its own Zenodo
record). ``--audio-dir`` follows upstream's ``data/`` layout (``get_all_audio_paths``, same file):
``sdd/audio/<dir>/<track>.2min.mp3`` and ``musiccaps/audio/[<ytid>]-[<start>-<end>].wav``; clips
are found by file name anywhere under the folder.

Prompt: upstream's zero-shot format (``get_prompts`` in prepare_prompts.py @ 51d5160): options
shuffled once per question by a seed from its id (upstream reports three shuffles; run the
benchmark again with another ``--seed`` for more). Parser: the ``muchomusic`` matcher.

Human baseline: none published. The paper (arXiv:2408.01337v1) reports random guessing (25.0) in
Table 3 beside the models; its 222 annotators validated the questions, which is not an accuracy.

Verified here: the column names against upstream's loader; question texts and options against
the 200 MuChoMusic rows of dasheng-lm ``evaluate/jsonl`` (``../shared/data/muchomusic``). Not
verified: a content hash of the Zenodo file (the lock records the one fetched).
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from musiceval.data.benchmarks import MUCHOMUSIC_ITEMS
from musiceval.catalogue.common import muchomusic_prompt, shuffled_options
from musiceval.catalogue.spec import ALL_CONTROLS, AudioIndex, Question, Source, register_benchmark

CSV = "muchomusic.csv"


def locate(q: Question, index: AudioIndex) -> str | None:
    dataset, _, audio_id = (q.audio_key or "").partition(":")
    if dataset == "sdd":
        return index.by_basename(f"{audio_id}.2min.mp3") or index.by_basename(f"{audio_id}.mp3")
    if dataset == "musiccaps":
        return index.by_prefix(f"[{audio_id}]-[") or index.by_basename(f"{audio_id}.wav")
    return None


@register_benchmark(
    name="muchomusic", title="MuChoMusic (multiple choice)",
    source=Source("url", urls=("https://zenodo.org/records/12709974/files/muchomusic.csv",),
                  pin="Zenodo record 12709974 (records are immutable)", size_bytes=None),
    licence="CC BY-SA 4.0 (questions); audio keeps the MusicCaps / Song Describer terms", items=MUCHOMUSIC_ITEMS,
    audio="not shipped: pass --audio-dir with upstream's data/ layout (musiccaps/audio, sdd/audio)",
    protocol="choice", answer_format="musiceval-choice",
    prompt="MuChoMusic zero-shot: 'Question: ... Options: (A) .. (D) .. The correct answer is: '",
    parser="muchomusic matcher", controls=ALL_CONTROLS, question_files=(CSV,), locate_audio=locate,
    version="Zenodo 12709974", options={"matcher": "muchomusic"},
    verified="columns (upstream loader @ 34f545b); questions/options vs dasheng-lm's 200 rows; no content hash",
)
def questions(files: Mapping[str, Path]) -> list[Question]:
    from musiceval.data.muchomusic_csv import load_muchomusic_csv

    items, failures = load_muchomusic_csv(files[CSV])
    if not items and failures:
        raise ValueError(failures[0].reason)
    out = []
    for item in items:
        options, letter, types = shuffled_options(f"muchomusic:{item.id}", item.choices[0], item.choices[1:])
        types = tuple(item.meta["distractor_types"][item.choices.index(o)] for o in options)
        dataset, audio_id = item.meta.get("dataset", ""), item.meta.get("audio_id", "")
        out.append(Question(id=f"q{item.id}", prompt=muchomusic_prompt(item.question, options), question=item.question,
                            audio_key=f"{dataset}:{audio_id}" if audio_id else None, choices=options, answer=letter,
                            group=item.group, meta={"knowledge": list(item.meta.get("knowledge", ())),
                                                    "reasoning": list(item.meta.get("reasoning", ())),
                                                    "distractor_types": list(types), "genre": item.meta.get("genre", "")}))
    return out
