"""RUListening / RUL-MuchoMusic answer files (leave-one-out results).

Layout of a results file (yongyizang/AreYouReallyListening ``ExampleAudioEval``,
``<model>_leave_one_out.json``): a JSON array, one object per question: ``question_id``,
``correct_answer``, ``passes`` (four objects: ``pass_number``, ``excluded_distractor``,
``model_output``, ``letter_mapping`` {letter: option text} in prompt order, plus the script's own
``extracted_answer_*``/``is_correct``), ``most_agreed_answer``, ``is_correct``, ``vote_counts``.
The questions file (``RUL-MuchoMusic.json``) maps a question id to ``question``, ``caption``,
``correct_answer``, ``distractors`` (four) and ``PI`` (perceptual index).

:func:`load_rul` turns every pass into an :class:`~musiceval.records.Item` (id
``<question_id>#<pass>``, ``group`` = question id, ``choices`` in letter order, ``answer`` the
correct option's letter) and a :class:`~musiceval.records.Response` (the raw ``model_output``;
answers are re-extracted by :mod:`musiceval.metrics.rul_matcher`, not read from the file). The condition
is ``noise`` when the file name says ``noise`` (the authors' Gaussian-noise control run), else
``correct``. A pass whose mapping does not hold the correct answer, or a question without passes,
is a counted failure.

:func:`musiceval.vocab.rul_prompts.leave_one_out_prompts` builds the four prompts of a live run.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from musiceval.data.answers import AnswerSet
from musiceval.records import Item, ItemFailure, Response

FORMAT = "rul-muchomusic"
_LETTERS = ("A", "B", "C", "D", "E")


def load_rul(path: str | Path, *, questions: dict[str, Any] | None = None, model: str = "",
             condition: str | None = None) -> AnswerSet:
    """Read a leave-one-out results file; ``questions`` (RUL-MuchoMusic.json, parsed) adds the
    question texts.

    Raises
    ------
    ValueError
        When the file is not a JSON array of results (naming the file and the layout).
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{p}: not a readable RUListening results file ({exc}); expected the JSON array that "
                         "ExampleAudioEval writes (<model>_leave_one_out.json)") from exc
    if not isinstance(data, list):
        raise ValueError(f"{p}: expected a JSON array of leave-one-out results, got {type(data).__name__}")
    cond = condition or ("noise" if "noise" in p.name.lower() else "correct")
    out = AnswerSet([], [], [], model=model or p.stem.replace("_leave_one_out", "").replace("_gaussian_noise", ""),
                    source=str(p), format=FORMAT)
    for index, obj in enumerate(data):
        if not isinstance(obj, dict) or not isinstance(obj.get("passes"), list) or not obj["passes"]:
            out.failures.append(ItemFailure(str(index), f"{p.name}[{index}]: no 'passes' list"))
            continue
        qid = str(obj.get("question_id", index))
        correct = obj.get("correct_answer")
        question = str((questions or {}).get(qid, {}).get("question", ""))
        for k, ps in enumerate(obj["passes"]):
            pid = f"{qid}#{k}"
            mapping = ps.get("letter_mapping") if isinstance(ps, dict) else None
            if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
                out.failures.append(ItemFailure(pid, f"{p.name}[{index}] pass {k}: no letter_mapping"))
                continue
            letters = [x for x in _LETTERS if x in mapping]
            options = tuple(mapping[x] for x in letters)
            if correct not in options:
                out.failures.append(ItemFailure(pid, f"{p.name}[{index}] pass {k}: the correct answer is not among its options"))
                continue
            text = ps.get("model_output")
            out.items.append(Item(id=pid, question=question, choices=options, answer=letters[options.index(correct)],
                                  reference=correct, group=qid,
                                  meta={"question_id": qid, "pass": k, "excluded_distractor": ps.get("excluded_distractor")}))
            out.responses.append(Response(item_id=pid, condition=cond, model=out.model, prompt="",
                                          text=text if isinstance(text, str) else ""))
    return out


def detect(path: str | Path, first_records: list) -> bool:
    """A leave-one-out results file: objects with ``question_id``, ``passes``, ``correct_answer``."""
    return bool(first_records) and all(
        isinstance(r, dict) and {"question_id", "passes", "correct_answer"} <= set(r) for r in first_records[:3])


def register() -> None:
    """Register the ``rul-muchomusic`` answer format (its matcher registers itself in :mod:`musiceval.metrics.rul_matcher`)."""
    from musiceval.data.formats import register_format

    register_format(FORMAT, protocols=("choice",), detect=detect, replace=True,
                    description="RUListening leave-one-out results ([[Letter]] answers, four passes per question)")(load_rul)


register()
