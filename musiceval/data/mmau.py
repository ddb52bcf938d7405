"""MMAU answer files: the benchmark's question file with a ``model_prediction`` per question.

Layout (Sakshi113/MMAU ``mmau-test-mini.json``; the official ``evaluation.py`` attaches each
submission's ``model_prediction`` to the question at the same index): a JSON array of objects
``id``, ``audio_id``, ``question``, ``choices``, ``answer`` (the text of one choice), ``dataset``,
``task`` (sound, music, speech), ``split``, ``category``, ``sub-category``, ``difficulty`` and
``model_prediction``. :func:`load_mmau` keeps the music subset by default (``task="music"``).

An empty or missing prediction is kept and scored wrong, as the official evaluation counts it
("No Prediction Count"; ``meta["no_prediction"]``); a question whose answer is not one of its
choices, or with fewer than two distinct choices, is an :class:`~musiceval.records.ItemFailure`.
Items are :class:`~musiceval.records.Item` with ``answer`` the letter of the answer in
``choices`` (A, B, C, ... in file order) and ``group`` the clip (``audio_id``; the question id when
it has none): questions about one clip are one cluster of the statistics, and the question control
moves answers between them (:meth:`musiceval.protocols.choice.ChoiceProtocol.question_permutation`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from musiceval.data.answers import AnswerSet
from musiceval.records import Item, ItemFailure, Response

FORMAT = "mmau"
_LETTERS = "ABCDEFGH"


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def load_mmau(path: str | Path, *, task: str | None = "music", model: str = "") -> AnswerSet:
    """Read an MMAU answer file (``task=None`` keeps every task); ``extra["other_tasks"]`` counts the
    questions of the other tasks (sound, speech) left out.

    Raises
    ------
    ValueError
        When the file is not a JSON array (naming the file and the expected layout).
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{p}: not a readable MMAU JSON file ({exc}); expected a JSON array of questions "
                         "with 'choices', 'answer' and 'model_prediction'") from exc
    if not isinstance(data, list):
        raise ValueError(f"{p}: expected a JSON array of MMAU questions, got {type(data).__name__}")
    out = AnswerSet([], [], [], model=model or p.stem, source=str(p), format=FORMAT, extra={"other_tasks": 0})
    seen: set[str] = set()
    for index, obj in enumerate(data):
        where = f"{p.name}[{index}]"
        if not isinstance(obj, dict):
            out.failures.append(ItemFailure(str(index), f"{where}: not an object"))
            continue
        qid = _text(obj.get("id")) or str(index)
        if task is not None and obj.get("task") != task:
            out.extra["other_tasks"] += 1
            continue
        choices, answer, question = obj.get("choices"), _text(obj.get("answer")), _text(obj.get("question"))
        if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices) or len(set(choices)) < 2:
            out.failures.append(ItemFailure(qid, f"{where}: 'choices' must be a list of at least two distinct strings"))
            continue
        if len(choices) > len(_LETTERS) or answer not in choices or question is None:
            out.failures.append(ItemFailure(qid, f"{where}: 'answer' {answer!r} is not one of its choices (or no 'question')"))
            continue
        if qid in seen:
            out.failures.append(ItemFailure(qid, f"{where}: duplicate id"))
            continue
        seen.add(qid)
        prediction = obj.get("model_prediction")
        text = prediction if isinstance(prediction, str) else ""
        meta = {k: obj.get(k) for k in ("task", "difficulty", "category", "sub-category", "dataset", "split") if k in obj}
        out.items.append(Item(id=qid, question=question, audio=_text(obj.get("audio_id")), choices=tuple(choices),
                              answer=_LETTERS[choices.index(answer)], reference=answer,
                              group=_text(obj.get("audio_id")) or qid, meta=meta))
        out.responses.append(Response(item_id=qid, condition="correct", model=out.model, prompt=question, text=text,
                                      meta={"no_prediction": not text}))
    return out


def detect(path: str | Path, first_records: list) -> bool:
    """An MMAU answer file: objects with ``choices``, ``answer``, ``task`` and ``model_prediction``."""
    return bool(first_records) and all(
        isinstance(r, dict) and {"choices", "answer", "task", "model_prediction"} <= set(r) for r in first_records[:3])


def register() -> None:
    """Register the ``mmau`` answer format (``musiceval.data.formats``) (its matcher registers itself in :mod:`musiceval.metrics.mmau_matcher`)."""
    from musiceval.data.formats import register_format

    register_format(FORMAT, protocols=("choice",), detect=detect, replace=True,
                    description="MMAU question file with model_prediction (music subset; official string_match)")(load_mmau)


register()
