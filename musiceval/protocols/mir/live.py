"""CMI-Bench on a live Music LM: instructions -> generation (cached) -> output records -> MIR metrics.

The same path serves the synthesised instruction set shipped in ``musiceval/evals/audio/cmi_bench``
(``scripts/make_mir_live_fixtures.py``) and a downloaded CMI-Bench (instruction files
``CMI_<task>.jsonl`` and the audio they name):

1. :func:`instruction_items` reads the ``test`` lines of a ``CMI_<task>.jsonl`` file into
   :class:`~musiceval.records.Item` rows: the instruction is the prompt, ``audio_path[0]`` the clip (relative to the data
   directory; absolute paths and ``..`` escapes are refused per item), ``audio_start`` /
   ``audio_end`` the window (an ``audio_end`` of -1 or 0, CMI-Bench's "to the end", means the
   whole file), ``output`` the reference;
2. :func:`musiceval.generate.generate_responses` answers them (condition ``correct``) through the
   response cache, so a rerun costs nothing;
3. :func:`output_records` turns the answers into CMI-Bench output records
   (``{question, response, correct_answer, audioid, other}``; :func:`write_outputs` writes them
   as the toolkit's ``<model>_<task>.jsonl`` so ``musiceval score mir`` scores the same file);
4. :func:`musiceval.protocols.mir.metrics.tasks.score_task` scores them with the task's parser, metric and
   trivial baseline.

From the shell (writes the output files, prints each task's metrics as JSON lines)::

    musiceval mir-live --model hf:/models/qwen2-audio \
        --instructions CMI-bench --tasks GS_key,Nsynth_pitch,gtzan_beat --limit 200 --out results/

Every instruction ends as a scored record or a counted failure with its reason (unreadable line,
refused path, missing or corrupt audio, model error); nothing is dropped silently. A model that
chunks long audio answers once per chunk; the record takes the first chunk's answer (CMI-Bench
asks one question per clip) and says so in ``other``.
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from musiceval.audio import AudioError, resolve_audio_path
from musiceval.data.cmibench import OutputRecord, audio_key, load_instructions
from musiceval.protocols.mir.metrics.tasks import FAMILIES, TaskError, TaskResult, score_task
from musiceval.records import Item, ItemFailure, Response

__all__ = ["LiveTask", "find_instruction_file", "instruction_items", "output_records", "run_live_task", "write_outputs"]


@dataclass
class LiveTask:
    """One task of a live run: what was asked, answered, scored, and what failed (with reasons)."""

    task: str
    #: the instruction file read
    source: str
    items: list[Item]
    records: list[OutputRecord]
    failures: list[ItemFailure] = field(default_factory=list)
    result: TaskResult | None = None
    #: why the task as a whole could not be scored (e.g. no item answered)
    error: str | None = None


def find_instruction_file(root: str | os.PathLike[str], task: str) -> Path:
    """``CMI_<task>.jsonl`` in ``root``, ``root/instructions`` or ``root/data/*`` (the CMI-bench
    repository layout). Raises FileNotFoundError naming the places looked at and the fix."""
    root = Path(root)
    name = f"CMI_{task}.jsonl"
    for candidate in (root / name, root / "instructions" / name, *sorted(root.glob(f"data/*/{name}"))):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"no {name} in {root}, {root / 'instructions'} or {root / 'data'}/*; clone "
        "https://github.com/nicolaus625/CMI-bench (its data/<dataset>/CMI_<task>.jsonl files) and download "
        "the audio with its data/<dataset>/download_*.sh scripts"
    )


def _window_end(value: float | None) -> float | None:
    return value if value is not None and value > 0 else None


def instruction_items(path: str | os.PathLike[str], task: str, *, data_dir: str | os.PathLike[str],
                      split: str | None = "test", limit: int | None = None) -> tuple[list[Item], list[ItemFailure]]:
    """Items of a ``CMI_<task>.jsonl`` file, and the lines that failed.

    ``split``: keep the lines of this split (CMI-Bench evaluates ``test``; upstream files also hold
    ``train``/``dev`` lines); lines without a split are kept; ``None`` keeps all. ``limit``: the
    first N kept lines.
    """
    if task not in FAMILIES:
        raise ValueError(f"unknown CMI-Bench task {task!r}; one of {', '.join(FAMILIES)}")
    rows, failures = load_instructions(path)
    failures = list(failures)
    rows = [r for r in rows if split is None or not r.split or split in r.split]
    items: list[Item] = []
    for row in rows[: limit if limit is not None else len(rows)]:
        where = f"{Path(path).name}:{row.line}"
        if not row.audio_path or not row.audio_path[0].strip():
            failures.append(ItemFailure(f"line{row.line}", f"{where}: no audio_path"))
            continue
        audio = row.audio_path[0]
        item_id = f"{row.line}|{audio_key(audio)}"
        try:
            resolve_audio_path(audio, data_dir)
        except AudioError as exc:
            failures.append(ItemFailure(item_id, f"{where}: refused: {exc}"))
            continue
        meta: dict[str, Any] = {"task": task, "line": row.line}
        if row.audio_start:
            meta["audio_start"] = row.audio_start
        if _window_end(row.audio_end) is not None:
            meta["audio_end"] = row.audio_end
        items.append(Item(id=item_id, audio=audio, question=row.instruction, reference=row.output, answer=row.output,
                          group=audio_key(audio), meta=meta))
    return items, failures


def output_records(items: Sequence[Item], responses: Sequence[Response], *,
                   condition: str = "correct") -> list[OutputRecord]:
    """CMI-Bench output records of the items that have an answer under ``condition``.

    Items without one are the generation's failures (already counted with their reason).
    """
    first: dict[str, Response] = {}
    for r in responses:
        if r.condition == condition and r.meta.get("chunk", 0) == 0:
            first.setdefault(r.item_id, r)
    records = []
    for item in items:
        r = first.get(item.id)
        if r is None:
            continue
        other = {"model": r.model, "n_chunks": r.meta.get("n_chunks", 1), "settings": r.meta.get("settings")}
        records.append(OutputRecord(
            item_id=item.id, index=int(item.meta.get("line", 0)), question=item.question, response=r.text,
            correct_answer=str(item.reference), audioid=str(item.audio), group=item.group or item.id, other=other,
        ))
    return records


def run_live_task(model, task: str, instruction_file: str | os.PathLike[str], *, data_dir: str | os.PathLike[str],
                  cache=None, settings=None, split: str | None = "test", limit: int | None = None,
                  compat: str | None = None, embed=None, bertscorer=None, progress: bool = False) -> LiveTask:
    """Ask ``model`` the instructions of one task file (``split``, first ``limit``), then score the
    answers (see the module docstring). ``embed`` / ``bertscorer`` as for
    :func:`~musiceval.protocols.mir.metrics.tasks.score_task` (tagging / captioning tasks)."""
    from musiceval.generate import generate_responses
    from musiceval.models.base import GenerationSettings

    items, failures = instruction_items(instruction_file, task, data_dir=data_dir, split=split, limit=limit)
    generated = generate_responses(model, items, conditions=("correct",), data_dir=data_dir, cache=cache,
                                   settings=settings or GenerationSettings(), progress=progress)
    live = LiveTask(task, str(instruction_file), items, output_records(items, generated.responses),
                    failures + list(generated.failures))
    if not live.records:
        live.error = f"{task}: no instruction was answered ({len(live.failures)} failures)"
        return live
    try:
        live.result = score_task(task, live.records, compat=compat, embed=embed, bertscorer=bertscorer)
    except TaskError as exc:
        live.error = str(exc)
    return live


def write_outputs(path: str | os.PathLike[str], records: Sequence[OutputRecord]) -> Path:
    """Write records as a CMI-Bench output file (one JSON array), the layout ``musiceval score mir`` reads."""
    path = Path(path)
    rows = [{"question": r.question, "response": r.response, "correct_answer": r.correct_answer,
             "audioid": r.audioid, "other": r.other} for r in records]
    path.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    return path
