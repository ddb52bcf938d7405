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
3. :func:`live_answers` turns the answers into the :class:`~musiceval.data.answers.AnswerSet` a
   recorded CMI-Bench output file gives (:meth:`musiceval.generate.GenerationResult.answer_set`; each
   answered item carries the output record's ``index``, ``audioid`` and ``other``);
4. :meth:`MirProtocol.from_answers <musiceval.protocols.mir.protocol.MirProtocol.from_answers>` scores
   them as it scores a recorded file (docs/extending.md, "A protocol"): the task's parser, metric and
   trivial baseline (:func:`musiceval.protocols.mir.metrics.tasks.score_task`). Its records are the
   CMI-Bench output records (``{question, response, correct_answer, audioid, other}``;
   :func:`write_outputs` writes them as the toolkit's ``<model>_<task>.jsonl`` so ``musiceval score
   mir`` scores the same file).

From the shell (writes the output files, prints each task's metrics as JSON lines)::

    musiceval mir-live --model hf:/models/qwen2-audio \
        --instructions CMI-bench --tasks GS_key,Nsynth_pitch,gtzan_beat --limit 200 --out results/

Every instruction ends as a scored record or a counted failure with its reason (unreadable line,
refused path, missing or corrupt audio, model error); nothing is dropped silently. A model that
chunks long audio answers once per chunk; the record takes the first chunk's answer (CMI-Bench
asks one question per clip) and says so in ``other``. A tagging or captioning task without ``embed``
/ ``bertscorer`` uses the protocol's default encoder and BERTScore model, as a recorded file does.
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from musiceval.audio import AudioError, resolve_audio_path
from musiceval.data.answers import AnswerSet
from musiceval.data.cmibench import OutputRecord, audio_key, load_instructions
from musiceval.generate import GenerationResult
from musiceval.protocols.base import ProtocolSettings
from musiceval.protocols.mir.metrics.tasks import FAMILIES, TaskError, TaskResult
from musiceval.protocols.mir.protocol import MirProtocol, records_by_condition
from musiceval.records import Item, ItemFailure

__all__ = ["LiveTask", "find_instruction_file", "instruction_items", "live_answers", "run_live_task", "write_outputs"]


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
    #: the protocol that scored the answers (None when nothing could be scored)
    protocol: MirProtocol | None = None
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


def live_answers(items: Sequence[Item], generated: GenerationResult, *, model: str, source: str,
                 failures: Sequence[ItemFailure] = ()) -> AnswerSet:
    """The ``correct`` answers of ``generated`` (a :class:`~musiceval.generate.GenerationResult`) to
    ``items`` as the answer set :meth:`MirProtocol.from_answers` reads: each item's first chunk's
    answer, in item order; an answered item's meta carries its output record's ``index`` (the
    instruction line), ``audioid`` and ``other`` (model, chunks, decoding settings). ``failures`` (the
    instruction lines that could not be asked) come before the failed requests."""
    answers = generated.answer_set(items, model=model, source=source)
    first = {}
    for r in answers.responses:
        if r.condition == "correct" and r.meta.get("chunk", 0) == 0:
            first.setdefault(r.item_id, r)
    asked, responses = [], []
    for item in items:
        r = first.get(item.id)
        if r is None:  # a failed request: among the generation's failures with its reason
            continue
        other = {"model": r.model, "n_chunks": r.meta.get("n_chunks", 1), "settings": r.meta.get("settings")}
        asked.append(replace(item, reference=str(item.reference),
                             meta={**item.meta, "index": int(item.meta.get("line", 0)), "audioid": str(item.audio),
                                   "other": other}))
        responses.append(r)
    return replace(answers, items=asked, responses=responses, failures=[*failures, *answers.failures])


def run_live_task(model, task: str, instruction_file: str | os.PathLike[str], *, data_dir: str | os.PathLike[str],
                  cache=None, settings=None, split: str | None = "test", limit: int | None = None,
                  compat: str | None = None, embed=None, bertscorer=None, progress: bool = False) -> LiveTask:
    """Ask ``model`` the instructions of one task file (``split``, first ``limit``), then score the
    answers through :class:`~musiceval.protocols.mir.protocol.MirProtocol` (see the module docstring).
    ``embed`` / ``bertscorer`` as the protocol's options of those names (tagging / captioning tasks)."""
    from musiceval.generate import generate_responses
    from musiceval.models.base import GenerationSettings
    from musiceval.redact import redact

    items, failures = instruction_items(instruction_file, task, data_dir=data_dir, split=split, limit=limit)
    generated = generate_responses(model, items, conditions=("correct",), data_dir=data_dir, cache=cache,
                                   settings=settings or GenerationSettings(), progress=progress)
    answers = live_answers(items, generated, model=redact(model.spec), source=str(instruction_file), failures=failures)
    live = LiveTask(task, str(instruction_file), items, [], list(answers.failures))
    if not answers.responses:
        live.error = f"{task}: no instruction was answered ({len(live.failures)} failures)"
        return live
    options = {"task": task, "compat": compat, "embed": embed, "bertscorer": bertscorer}
    try:
        live.protocol = MirProtocol.from_answers(answers, ProtocolSettings(seed=settings.seed if settings else 0,
                                                                           options=options))
    except TaskError as exc:
        live.records = records_by_condition(answers)["correct"]  # written all the same
        live.error = str(exc)
        return live
    live.records = live.protocol.records["correct"]
    live.result = live.protocol.result("correct")
    return live


def write_outputs(path: str | os.PathLike[str], records: Sequence[OutputRecord]) -> Path:
    """Write records as a CMI-Bench output file (one JSON array), the layout ``musiceval score mir`` reads."""
    path = Path(path)
    rows = [{"question": r.question, "response": r.response, "correct_answer": r.correct_answer,
             "audioid": r.audioid, "other": r.other} for r in records]
    path.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    return path
