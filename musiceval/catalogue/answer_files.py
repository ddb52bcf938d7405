"""Generated responses written as answer files in each benchmark's format, so that every existing
gate reads what the model answered exactly as it reads a team's recorded answers.

=====================  ==============================================================================
answer format          one record per response
=====================  ==============================================================================
``musiceval-choice``   ``item_id, question, choices, answer, text, condition, model, prompt, group``, ``task``
                       (the benchmark's task of the item, where it has several: a per-task breakdown)
``musiceval-factual``  ``item_id, prompt, text, labels, condition, group, chunk, meta.n_chunks``
``musiceval-freeform`` ``id, question, reference, response, condition, group, prompt, model``, ``description``
                       (the item's audio description, where it has one: the rubric judge reads it)
``cmi-bench``          ``question, response, correct_answer, audioid, other`` (``<model>_<task>.jsonl``,
                       ``<model>_<task>_<variant>.jsonl`` for a task's variant,
                       Correct only: the toolkit's outputs hold no condition)
=====================  ==============================================================================

A run with ``--repeats K`` (K sampled answers per item, :mod:`musiceval.suite.repeats`) adds
``repeat`` (0..K-1) to every row; a reader makes each repeat an item of its own
(:func:`musiceval.data.answers.repeated_row`). A run of one answer per item writes no such field.

Beside the answer files, ``musiceval.datasets.json`` maps each answer file to the dataset it was
generated from (id, revision, question-file and audio hashes: :func:`musiceval.catalogue.lock.dataset_fingerprint`),
which the run's provenance records (:func:`musiceval.provenance.fingerprint`).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Iterable

from musiceval.catalogue.lock import dataset_fingerprint
from musiceval.catalogue.prepare import PrepareReport
from musiceval.catalogue.spec import Benchmark
from musiceval.records import Item, Response

DATASETS_SIDECAR = "musiceval.datasets.json"


def safe_label(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:80] or "model"


def answer_path(benchmark: Benchmark, out_dir: Path, model: str) -> Path:
    if benchmark.answer_format == "cmi-bench":
        return out_dir / "cmi-bench" / f"{safe_label(model)}_{benchmark.task_label}.jsonl"
    return out_dir / f"{benchmark.name.replace('/', '_')}.jsonl"


def _rows(benchmark: Benchmark, items: dict[str, Item], responses: Iterable[Response], model: str) -> list[dict]:
    rows = []
    fmt = benchmark.answer_format
    for r in responses:
        item = items.get(r.item_id)
        if item is None:
            continue
        chunk = int(r.meta.get("chunk", 0) or 0)
        if fmt != "musiceval-factual" and chunk:
            continue  # one answer per item outside factual QA: the first chunk's
        if fmt == "musiceval-choice":
            row = {"item_id": item.id, "question": item.meta.get("raw_question", item.question), "choices": list(item.choices),
                   "answer": item.answer, "text": r.text, "condition": r.condition, "model": model, "prompt": r.prompt,
                   "group": item.group or item.id}
            for key in ("knowledge", "reasoning", "distractor_types", "task"):
                if item.meta.get(key) is not None:
                    row[key] = item.meta[key]
            if len(item.choices) < 4 and "distractor_types" not in row:
                continue
        elif fmt == "musiceval-factual":
            row = {"item_id": item.id, "prompt": r.prompt, "text": r.text, "labels": list(item.labels),
                   "condition": r.condition, "group": item.group or item.id, "model": model, "chunk": chunk,
                   "meta": {"n_chunks": int(r.meta.get("n_chunks", 1) or 1)}}
        elif fmt == "musiceval-freeform":
            row = {"id": item.id, "question": item.question, "reference": item.reference, "response": r.text,
                   "condition": r.condition, "group": item.group or item.id, "prompt": r.prompt, "model": model}
            if isinstance(item.meta.get("description"), str) and item.meta["description"].strip():
                row["description"] = item.meta["description"]
        elif fmt == "cmi-bench":
            if r.condition != "correct":
                continue
            row = {"question": item.question, "response": r.text, "correct_answer": item.reference or "",
                   "audioid": item.audio, "other": item.meta.get("other")}
        else:
            raise ValueError(f"{benchmark.name}: answer format {fmt!r} has no writer; use one of musiceval-choice, "
                             "musiceval-factual, musiceval-freeform, cmi-bench")
        if "repeat" in r.meta:  # one of K sampled answers (musiceval.suite.repeats)
            row["repeat"] = int(r.meta["repeat"])
        rows.append(row)
    return rows


def write_answers(benchmark: Benchmark, report: PrepareReport, items: list[Item], responses: Iterable[Response],
                  out_dir: Path, model: str) -> Path:
    """Write ``benchmark``'s answer file under ``out_dir`` and record its dataset in the sidecar."""
    target = answer_path(benchmark, out_dir, model)
    target.parent.mkdir(parents=True, exist_ok=True)
    rows = _rows(benchmark, {i.id: i for i in items}, responses, model)
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(tmp, target)
    sidecar = target.parent / DATASETS_SIDECAR
    known = json.loads(sidecar.read_text(encoding="utf-8")) if sidecar.is_file() else {}
    known[target.name] = {"benchmark": benchmark.name, **dataset_fingerprint(report.lock)}
    sidecar.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return target


def answers_entry(benchmark: Benchmark, path: Path, report: PrepareReport) -> dict:
    """The ``[[model.answers]]`` entry declaring ``path`` (the coverage gate's denominator is the
    catalogue's item count, recorded in the lock)."""
    entry: dict = {"protocol": benchmark.protocol, "format": benchmark.answer_format, "label": benchmark.name.replace("/", "_"),
                   "expected_items": int(report.lock.items)}
    if benchmark.answer_format == "cmi-bench":
        entry["file"] = str(path)
        entry["label"] = benchmark.task_label
    else:
        entry["file"] = str(path)
    entry.update({k: v for k, v in benchmark.options.items() if k in ("matcher", "vocab", "options_as_published")})
    if benchmark.human_baselines:  # the reference line the choice gates record as a finding
        entry["human_baselines"] = {k: b.as_table() for k, b in benchmark.human_baselines.items()}
    source = benchmark.source
    if source.revision is None and source.unpinned:  # the verdict line of every run that used it says so
        entry["unpinned"] = source.unpinned
    return entry
