"""MusicQA (Liu et al. 2024, MU-LLaMA) loaders: the released JSON, the dasheng recorded layout,
and musiceval's own free-form JSONL.

Layouts
-------
**MU-LLaMA release** (``MusicQA/EvalMusicQA.json``, also the MTT/MusicCaps parts): one JSON array
of ``{"audio_name": "012542.wav", "conversation": [{"from": "human", "value": <question>},
{"from": "gpt", "value": <answer>}]}``. Several questions share a clip; the item id is
``<audio_name>#<k>`` (k = the question's index among that clip's records, in file order), the
group (cluster for statistics) is the clip. :func:`load_musicqa_release`.

**dasheng recorded** (``../shared/data/musicqa/dev_midashenglm.jsonl``, from
xiaomi-research/dasheng-lm ``evaluate/jsonl``): JSON lines with ``question``, ``answer``
(reference), ``audio`` (``audios_eval_<track>_<hash>.flac``, one file per question), ``prompt``
(question + "Answer with 1-2 sentences"), ``model_output``, ``model_name``. The item id is the
``audio`` file name; the group is the MTG-Jamendo track number (``013063``), since the ~9
questions of one track are not independent. Some references carry a copy of the question as a
prefix (``"Describe the audio: The audio is ..."``, 8 of the 400 shipped rows; 4 more are
*only* the question): :func:`strip_question_prefix` removes ``<question without '?'>:``; an
item whose reference is nothing but the question is left out by the rule
``reference_copies_question`` (``AnswerSet.excluded``, :mod:`musiceval.exclusions`): counted,
not a failure of the model. :func:`load_dasheng_musicqa`.

**musiceval free-form** JSON lines: ``id``, ``question``, ``reference`` (string or list of strings),
``response`` (the model's answer; ``null`` = no output, scored as empty), optional ``prompt``
(default: the question), ``condition`` (default ``correct``), ``group``, ``audio``, ``model``,
``description`` (the audio described in words, which the judge's rubric mode reads: docs/judge.md).
:func:`load_freeform_jsonl`.

Every loader returns the :class:`~musiceval.data.answers.AnswerSet` the free-form protocol scores:
items, responses and per-item failures (bad JSON, non-UTF-8 lines, missing fields, duplicates),
never a crash or a silent drop.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from musiceval.data.answers import AnswerSet, count_model, repeated_row
from musiceval.data.jsonl import read_json_objects
from musiceval.exclusions import exclude
from musiceval.records import Item, ItemFailure, Response

_TRACK_RE = re.compile(r"^audios_[a-z]+_(\d+)_[0-9a-f]+\.\w+$")


def strip_question_prefix(question: str, answer: str) -> str:
    """Remove a leading copy of the question (``"<question without ?>: "``) from a reference.

    >>> strip_question_prefix("Describe the audio", "Describe the audio: A calm piece.")
    'A calm piece.'
    >>> strip_question_prefix("What do you hear in the audio?", "What do you hear in the audio")
    ''
    """
    q = question.strip().rstrip("?").strip()
    a = answer.strip()
    if q and a.lower().startswith(q.lower()):
        rest = a[len(q):]
        if not rest.strip(" ?"):
            return ""
        if rest.startswith(":"):
            return rest[1:].strip()
    return a


def _read_jsonl(path: Path) -> Iterator[tuple[str, Any]]:
    """Yield (``file:line``, parsed object or :class:`ItemFailure`) for each non-blank line."""
    for number, obj in read_json_objects(path, what="a recorded-answers JSONL file"):
        yield f"{path.name}:{number}", obj


def _text_field(obj: dict, key: str, *, allow_none: bool = False) -> str:
    value = obj.get(key)
    if value is None and allow_none and key in obj:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"field {key!r} must be a string, got {type(value).__name__ if key in obj else 'nothing'}")
    return value


def track_of(audio_name: str) -> str:
    """MTG-Jamendo track number of a dasheng audio name (``audios_eval_013063_<hash>.flac``)."""
    m = _TRACK_RE.match(audio_name)
    return m.group(1) if m else audio_name


def load_dasheng_musicqa(path: str | Path) -> AnswerSet:
    """Load the dasheng recorded MusicQA layout (module docstring); strips question prefixes."""
    path = Path(path)
    data, seen, failed = AnswerSet(source=str(path), format="dasheng-musicqa"), set(), set()
    copies: list[str] = []  # references that are only the question: left out by rule, not failures
    for where, obj in _read_jsonl(path):
        if isinstance(obj, ItemFailure):
            data.failures.append(obj)
            continue
        audio = obj.get("audio")
        item_id = audio if isinstance(audio, str) and audio.strip() else where
        count_model(data, obj.get("model_name"))  # a duplicate's model too: two models' answers are refused
        try:
            question = _text_field(obj, "question")
            answer = _text_field(obj, "answer")
            output = _text_field(obj, "model_output", allow_none=True)
            reference = strip_question_prefix(question, answer)
            if item_id in seen:
                raise ValueError(f"duplicate item {item_id!r}")
            if not answer.strip():
                raise ValueError("reference ('answer') is empty; nothing to score against")
            if not reference:
                copies.append(item_id)
                continue
        except ValueError as exc:
            # a record whose id was already used fails under its own file:line, so every duplicate is counted
            failed_id = where if item_id in seen or item_id in failed else item_id
            failed.add(failed_id)
            data.failures.append(ItemFailure(failed_id, f"{where}: {exc}"))
            continue
        seen.add(item_id)
        data.items.append(Item(id=item_id, question=question, audio=item_id if item_id == audio else None,
                               reference=reference, group=track_of(item_id),
                               meta={"dataset": obj.get("dataset_name"), "answer_raw": answer}))
        data.responses.append(Response(item_id=item_id, condition="correct", model=str(obj.get("model_name") or "unknown"),
                                       prompt=str(obj.get("prompt") or question), text=output))
    data.excluded.extend(exclude("reference_copies_question", copies, detail=path.name))
    return data


def load_musicqa_release(path: str | Path) -> AnswerSet:
    """Load MU-LLaMA's released MusicQA JSON (``EvalMusicQA.json`` layout): items, no responses."""
    path = Path(path)
    try:
        records = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: MusicQA file not found; download MusicQA from the MU-LLaMA release (huggingface.co/datasets/mu-llama/MusicQA)") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a MusicQA JSON array ({exc}); expected the EvalMusicQA.json layout") from None
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON array of {{audio_name, conversation}} records")
    data = AnswerSet(source=str(path), format="musicqa-release")
    per_clip: dict[str, int] = {}
    for k, rec in enumerate(records):
        where = f"{path.name}[{k}]"
        try:
            if not isinstance(rec, dict):
                raise ValueError("record is not an object")
            audio = _text_field(rec, "audio_name")
            conv = rec.get("conversation")
            if not isinstance(conv, list) or len(conv) < 2:
                raise ValueError("field 'conversation' must hold a human turn and a gpt turn")
            question = _text_field(conv[0], "value") if isinstance(conv[0], dict) else ""
            answer = _text_field(conv[1], "value") if isinstance(conv[1], dict) else ""
            if conv[0].get("from") != "human" or conv[1].get("from") != "gpt":
                raise ValueError("conversation turns must come from 'human' then 'gpt'")
            if not question.strip() or not answer.strip():
                raise ValueError("empty question or answer")
        except (ValueError, AttributeError) as exc:
            data.failures.append(ItemFailure(where, f"{where}: {exc}"))
            continue
        index = per_clip.get(audio, 0)
        per_clip[audio] = index + 1
        data.items.append(Item(id=f"{audio}#{index}", question=question, audio=audio, reference=answer.strip(),
                               group=audio, meta={"dataset": "MusicQA"}))
    return data


def load_freeform_jsonl(path: str | Path) -> AnswerSet:
    """Load musiceval's free-form JSONL (module docstring). One item per id; one response per
    (id, condition)."""
    path = Path(path)
    data = AnswerSet(source=str(path), format="musiceval-freeform")
    items: dict[str, Item] = {}
    seen: set[tuple[str, str]] = set()
    failed: set[str] = set()
    for where, obj in _read_jsonl(path):
        if isinstance(obj, ItemFailure):
            data.failures.append(obj)
            continue
        try:
            obj = repeated_row(obj, "id", data.repeat_of)
        except ValueError as exc:
            data.failures.append(ItemFailure(where, f"{where}: {exc}"))
            continue
        item_id = obj.get("id")
        item_id = str(item_id) if isinstance(item_id, (str, int)) and str(item_id).strip() else where
        try:
            question = _text_field(obj, "question")
            ref = obj.get("reference")
            if isinstance(ref, list) and ref and all(isinstance(r, str) for r in ref):
                refs = tuple(r for r in ref)
            elif isinstance(ref, str):
                refs = (ref,)
            else:
                raise ValueError("field 'reference' must be a string or a list of strings")
            if not any(r.strip() for r in refs):
                raise ValueError("field 'reference' is empty")
            text = _text_field(obj, "response", allow_none=True)
            condition = str(obj.get("condition") or "correct")
            if (item_id, condition) in seen:
                raise ValueError(f"duplicate response for item {item_id!r}, condition {condition!r}")
        except ValueError as exc:
            # a record whose id was already used fails under its own file:line, so every duplicate is counted
            failed_id = where if item_id in items or item_id in failed else item_id
            failed.add(failed_id)
            data.failures.append(ItemFailure(failed_id, f"{where}: {exc}"))
            continue
        seen.add((item_id, condition))
        if item_id not in items:
            group = obj.get("group")
            description = obj.get("description")  # the audio described in words (docs/judge.md, rubric)
            items[item_id] = Item(id=item_id, question=question, audio=obj.get("audio") if isinstance(obj.get("audio"), str) else None,
                                  reference=refs[0], group=str(group) if group is not None else item_id,
                                  meta={"references": refs, **({"description": description}
                                                               if isinstance(description, str) and description.strip()
                                                               else {})})
            data.items.append(items[item_id])
        data.responses.append(Response(item_id=item_id, condition=condition, model=str(obj.get("model") or "unknown"),
                                       prompt=str(obj.get("prompt") or question), text=text))
    return data


def item_references(item: Item) -> tuple[str, ...]:
    """All references of an item (several for captions, one for MusicQA)."""
    refs = item.meta.get("references") if item.meta else None
    return tuple(refs) if refs else ((item.reference,) if item.reference is not None else ())
