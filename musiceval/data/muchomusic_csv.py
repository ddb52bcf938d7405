"""The official MuChoMusic release CSV (``muchomusic.csv``, Zenodo 12709974) as questions.

Layout and conventions: :mod:`musiceval.data.muchomusic` (module docstring). Items carry the
options in canonical order (answer first, ``answer == "A"``) with ``meta["distractor_types"]``;
prompts shuffle them (:mod:`musiceval.vocab.choice_prompts`).
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterator

from musiceval.data.muchomusic import ChoiceDataError, parse_dimension_list
from musiceval.schemas import validate_options
from musiceval.records import Item, ItemFailure
from musiceval.vocab.choice_prompts import ANSWER_TYPE, DISTRACTOR_TYPES

CSV_REQUIRED = ("question", "correct_answer", "distractor_1_answer", "distractor_2_answer", "distractor_3_answer")


def _audio_id(dataset: str, identifier: str) -> str:
    """Track id from ``dataset_identifier``, as MuChoMusic's ``load_questions_from_csv`` derives it."""
    stem = identifier.removesuffix(".json")
    if dataset == "musiccaps" and "_" in stem:
        return "_".join(stem.split("_")[:-1])
    return stem


def _csv_rows(reader: csv.DictReader, path: Path) -> Iterator[dict]:
    try:
        yield from reader
    except csv.Error as exc:  # e.g. a field over csv.field_size_limit(): the rest cannot be trusted
        raise ChoiceDataError(f"{path}:{reader.line_num}: unreadable CSV ({exc}); fix or re-export the file") from None


def load_muchomusic_csv(path: str | Path) -> tuple[list[Item], list[ItemFailure]]:
    """Load questions from the official ``muchomusic.csv`` (see the module docstring).

    Returns the items (options in canonical order: answer first, then distractors 1-3;
    ``answer == "A"``; ``meta`` holds ``knowledge``, ``reasoning``, ``distractor_types``,
    ``dataset``, ``audio_id``, ``genre`` and the remaining columns) and one failure per bad row.
    Item ids are the 0-based data-row index unless the file has an ``id`` column; the group is
    ``<dataset>:<audio id>`` so that questions on one track form one cluster.
    """
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise ChoiceDataError(
            f"{path}: not found; download it with `wget -P data https://zenodo.org/record/12709974/files/muchomusic.csv`"
        ) from None
    except UnicodeDecodeError as exc:
        raise ChoiceDataError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start}); re-encode the file as UTF-8") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in CSV_REQUIRED if c not in (reader.fieldnames or ())]
    if missing:
        raise ChoiceDataError(f"{path}: missing column(s) {', '.join(missing)}; expected the muchomusic.csv layout")
    items: list[Item] = []
    failures: list[ItemFailure] = []
    seen: set[str] = set()
    for index, row in enumerate(_csv_rows(reader, path)):
        item_id = str(row.get("id") or index)
        where = f"{path.name}: data row {index}"
        try:
            if None in row:
                raise ValueError(f"{len(row[None])} more field(s) than the header has columns")
            question = (row.get("question") or "").strip()
            if not question:
                raise ValueError("empty 'question'")
            options = [(row.get(c) or "").strip() for c in CSV_REQUIRED[1:]]
            validate_options(options, "A")
            knowledge = parse_dimension_list(row.get("music_knowledge"), field_name="music_knowledge")
            reasoning = parse_dimension_list(row.get("music_reasoning"), field_name="music_reasoning")
            if item_id in seen:
                raise ValueError(f"duplicate id {item_id!r}")
        except ValueError as exc:
            failures.append(ItemFailure(item_id, f"{where}: {exc}"))
            continue
        seen.add(item_id)
        dataset = (row.get("dataset") or "").strip()
        audio_id = _audio_id(dataset, (row.get("dataset_identifier") or "").strip())
        extra = {k: v for k, v in row.items() if k not in (*CSV_REQUIRED, "music_knowledge", "music_reasoning", "id")}
        meta = {**extra, "knowledge": knowledge, "reasoning": reasoning, "dataset": dataset, "audio_id": audio_id,
                "distractor_types": (ANSWER_TYPE, *DISTRACTOR_TYPES)}
        items.append(Item(id=item_id, question=question, choices=tuple(options), answer="A",
                          group=f"{dataset}:{audio_id}" if audio_id else item_id, meta=meta))
    return items, failures
