"""Helpers the benchmark modules share: seeded option shuffles in MuChoMusic's prompt format,
JSON reading with a clear error, and clip lookup rules."""
from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any, Sequence

from musiceval.vocab.choice_prompts import format_question

LETTERS = ("A", "B", "C", "D")
#: ``distractor_types`` for sets without MuChoMusic's typed distractors (the musiceval choice layout
#: wants one type per option when there are fewer than four); the names are placeholders there
PLACEHOLDER_TYPES = ("answer", "incorrect_but_related", "correct_but_unrelated", "incorrect_and_unrelated")


def shuffled_options(key: str, correct: str, distractors: Sequence[str]) -> tuple[tuple[str, ...], str, tuple[str, ...]]:
    """``(options in prompt order, answer letter, distractor types in prompt order)``: the correct
    option and its distractors shuffled by a generator seeded from ``key`` (a rerun asks the same)."""
    options = [correct, *distractors]
    types = list(PLACEHOLDER_TYPES[: len(options)])
    order = list(range(len(options)))
    random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")).shuffle(order)
    shown = tuple(options[i] for i in order)
    return shown, LETTERS[order.index(0)], tuple(types[i] for i in order)


def muchomusic_prompt(question: str, options: Sequence[str]) -> str:
    """MuChoMusic's zero-shot prompt (``get_prompts`` in mulab-mir/muchomusic prepare_prompts.py)."""
    return format_question(question, options)


def read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable {what} ({exc})") from None


def relative_or_basename(index, key: str) -> str | None:
    """A clip by its path relative to the audio root (``./`` dropped), else by its file name."""
    rel = key.removeprefix("./")
    return index.find(rel) or index.by_basename(Path(rel).name)
