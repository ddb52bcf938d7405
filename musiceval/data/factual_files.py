"""Reading recorded factual answers for ``musiceval score factual``: formats, chunks, manifest join.

Formats (:data:`FORMATS`):

- ``musiceval``: JSON lines ``{item_id, prompt, text, labels, [condition], [group], [chunk]}``;
  ``labels`` a list or a comma-separated string (field renamed with ``--labels-field``);
  ``condition`` ``correct`` (default) or ``random`` (the answer to another clip, scored against
  this item's labels); ``chunk`` (or ``meta.chunk``, as ``musiceval generate --out`` writes it) the
  index of the audio chunk the answer is about. Rows of one (item, condition) with different
  chunk indices form one chunked answer (aggregated with ``--chunks``); ``meta.n_chunks``, when
  present, must match the chunks found. Other conditions (``noise``, ``text_only``) are per-row
  failures: the factual protocol scores Correct and Random.
- ``dasheng`` (:mod:`musiceval.data.dasheng`, labels in ``label``);
- ``cmi-bench`` (:mod:`musiceval.data.cmibench`, labels in ``correct_answer``, comma-separated
  for multi-label tasks).

:func:`load_factual` returns the :class:`~musiceval.data.answers.AnswerSet` the factual protocol
reads (a chunked answer: one response per chunk, ``meta["chunk"]`` and ``meta["n_chunks"]``);
:func:`musiceval.protocols.factual.engine.factual_set` turns it into the engine's input.

``manifest=`` (CLI ``--manifest``) joins a ``musiceval generate`` manifest by item id: a record
missing ``labels``, ``prompt``, ``group`` or a manifest ``meta`` key (``asked``, ``options``,
``item``) takes it from the manifest item, so ``generate --out`` files score directly.
"""
from __future__ import annotations

from pathlib import Path

from musiceval.data.answers import AnswerSet, drop_strays, one_model, repeated_row, split_labels, stray_reason
from musiceval.data.errors import InputError
from musiceval.data.jsonl import read_json_objects
from musiceval.records import Item, ItemFailure, Response

FORMATS = ("musiceval", "dasheng", "cmi-bench")
DEFAULT_LABELS_FIELD = {"musiceval": "labels", "dasheng": "label", "cmi-bench": "correct_answer"}
#: a line longer than this is a per-row failure (looping model output), not parsed
MAX_LINE_BYTES = 1_000_000


def read_records(path: Path, manifest: str | Path | None = None) -> tuple[list[tuple[str, dict]], list[ItemFailure]]:
    """``(where, record)`` per readable JSON-object line (joined with the manifest), and a failure
    per unreadable line (not UTF-8, not JSON, not an object with ``item_id`` and a string ``text``,
    over :data:`MAX_LINE_BYTES`)."""
    records, failures = [], []
    for lineno, rec in read_json_objects(path, what="an answers file", max_line_bytes=MAX_LINE_BYTES):
        if isinstance(rec, ItemFailure):
            failures.append(rec)
            continue
        if not isinstance(rec.get("text"), str) or "item_id" not in rec:
            where = f"{path.name}:{lineno}"
            failures.append(ItemFailure(where, f"{where}: bad record: expected an object with 'item_id' and a string 'text'"))
            continue
        where = f"{path.name}:{lineno}"
        rec["item_id"] = str(rec["item_id"])
        records.append((where, rec))
    if manifest is not None:
        records = join_manifest(records, manifest)
    return records, failures


def join_manifest(records: list[tuple[str, dict]], manifest: str | Path) -> list[tuple[str, dict]]:
    """Fill each record's missing ``labels``/``prompt``/``group`` and manifest meta keys from the
    manifest item with the same id (see the module docstring)."""
    from musiceval.data.manifest import ManifestError, load_manifest

    try:
        items, _ = load_manifest(manifest)
    except ManifestError as exc:
        raise InputError(f"--manifest: {exc}") from exc
    by_id = {it.id: it for it in items}
    out = []
    for where, rec in records:
        item = by_id.get(rec["item_id"])
        if item is not None:
            base = {**dict(item.meta), "prompt": item.question}
            if item.labels:
                base["labels"] = list(item.labels)
            if item.group is not None:
                base["group"] = item.group
            rec = {**base, **rec}
        out.append((where, rec))
    return out


def chunk_of(rec: dict) -> tuple[int, int | None]:
    """The record's chunk index and its ``n_chunks`` (None when absent); ValueError when malformed."""
    meta = rec.get("meta") if isinstance(rec.get("meta"), dict) else {}
    index = rec.get("chunk", meta.get("chunk", 0))
    total = rec.get("n_chunks", meta.get("n_chunks"))
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise ValueError(f"chunk index must be a non-negative integer, got {index!r}")
    if total is not None and (not isinstance(total, int) or total <= index):
        raise ValueError(f"n_chunks {total!r} does not cover chunk {index}")
    return index, total


def _add_answer(answers: AnswerSet, item_id: str, condition: str, prompt: str, text) -> None:
    """One answer (a string, or a tuple of chunk answers: one response per chunk)."""
    chunks = (text,) if isinstance(text, str) else tuple(text)
    for k, t in enumerate(chunks):
        meta = {"chunk": k, "n_chunks": len(chunks)} if len(chunks) > 1 else {}
        answers.responses.append(Response(item_id=item_id, condition=condition, model="", prompt=prompt, text=t, meta=meta))


def _load_musiceval(path: Path, labels_field: str, manifest) -> AnswerSet:
    records, failures = read_records(path, manifest)
    model, strays = one_model(rec.get("model") for _, rec in records)  # several models' rows: refused, naming them
    groups: dict[tuple[str, str], dict] = {}
    repeat_of: dict[str, str] = {}
    for where, rec in records:
        try:
            rec = repeated_row(rec, "item_id", repeat_of)
        except ValueError as exc:
            failures.append(ItemFailure(where, f"bad record: {exc}"))
            continue
        item_id, condition = rec["item_id"], rec.get("condition", "correct")
        if rec.get("model") in strays:  # a single row naming another model: that row's failure
            failures.append(ItemFailure(where, stray_reason(rec["model"], model)))
            continue
        try:
            if condition not in ("correct", "random"):
                raise ValueError(f"condition {condition!r} is not scored by the factual protocol (correct, random)")
            index, total = chunk_of(rec)
            labels = split_labels(rec[labels_field]) if labels_field in rec else None
        except ValueError as exc:
            failures.append(ItemFailure(where, f"bad record: {exc}"))
            continue
        g = groups.setdefault((item_id, condition), {"chunks": {}, "labels": None, "where": where, "total": total,
                                                     "prompt": str(rec.get("prompt") or ""),
                                                     "group": str(rec.get("group") or item_id), "error": None})
        if index in g["chunks"]:
            g["error"] = f"{where}: duplicate answer for chunk {index}"
        g["chunks"][index] = rec["text"]
        if labels is not None:
            if g["labels"] is not None and set(g["labels"]) != set(labels):
                g["error"] = f"{where}: labels {list(labels)} differ from the item's other rows {list(g['labels'])}"
            g["labels"] = g["labels"] or labels

    data = AnswerSet(failures=failures, model=model, source=str(path), format="musiceval-factual", repeat_of=repeat_of)
    random: dict = {}
    for (item_id, condition), g in groups.items():
        indices = sorted(g["chunks"])
        if g["error"] is None and indices != list(range(g["total"] or len(indices))):
            g["error"] = f"chunks {indices} found, expected 0..{(g['total'] or len(indices)) - 1}"
        if g["error"] is None and condition == "correct" and g["labels"] is None:
            g["error"] = f"{g['where']}: missing labels field {labels_field!r} (pass --labels-field or --manifest)"
        if g["error"] is not None:
            data.failures.append(ItemFailure(item_id, f"{condition}: {g['error']}"))
            continue
        text = g["chunks"][0] if len(indices) == 1 else tuple(g["chunks"][k] for k in indices)
        if condition == "random":
            random[item_id] = text
            continue
        data.items.append(Item(id=item_id, question=g["prompt"], labels=tuple(g["labels"]), group=g["group"]))
        _add_answer(data, item_id, "correct", g["prompt"], text)
    prompt_of = {it.id: it.question for it in data.items}
    for item_id, text in random.items():
        if item_id in prompt_of:
            _add_answer(data, item_id, "random", prompt_of[item_id], text)
        else:
            data.failures.append(ItemFailure(item_id, "random: an answer for an item with no correct-condition row"))
    return data


def load_factual(path: str | Path, fmt: str, labels_field: str | None = None, *, manifest: str | Path | None = None) -> AnswerSet:
    """Read recorded factual answers in one of :data:`FORMATS`; bad records become failures."""
    path = Path(path)
    if fmt not in FORMATS:
        raise InputError(f"{path}: unknown --format {fmt!r}; one of {', '.join(FORMATS)}")
    if not path.is_file():
        raise InputError(f"{path}: file not found; pass an existing recorded-answers file")
    if manifest is not None and fmt != "musiceval":
        raise InputError(f"{path}: --manifest joins musiceval-format answers only (got --format {fmt})")
    labels_field = labels_field or DEFAULT_LABELS_FIELD[fmt]
    try:
        if fmt == "musiceval":
            return _load_musiceval(path, labels_field, manifest)
        if fmt == "dasheng":
            from musiceval.data.dasheng import load_dasheng_jsonl

            rec = load_dasheng_jsonl(path, labels_field=labels_field)
            model, strays = one_model(rec.models)  # several models' rows (a second answer included): refused
            answers = AnswerSet(list(rec.items), list(rec.responses), list(rec.failures), model=model, source=str(path),
                                format="dasheng-factual")
            drop_strays(answers, model, strays)  # a single row naming another model: that row's failure
            return answers
        from musiceval.data.cmibench import answer_set, load_outputs

        out = load_outputs(path)
        if labels_field != "correct_answer":
            raise InputError(f"{path}: cmi-bench outputs carry their labels in 'correct_answer'; drop --labels-field")
        return answer_set(out)
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 ({exc.reason}); re-encode the file as UTF-8") from exc
    except ValueError as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{path}: {exc}") from exc
