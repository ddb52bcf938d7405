"""RUListening's four-fold leave-one-out prompts (yongyizang/AreYouReallyListening; docs/mmau-rul.md).

:data:`PROMPT` is the authors' template; :func:`leave_one_out_prompts` builds the four prompts of
one question for a live run, each without one distractor, the option order drawn from a generator
seeded by ``(seed, question id, pass)``. Their answers are read back by
:mod:`musiceval.data.rul` (the ``rul-muchomusic`` answer format).
"""
from __future__ import annotations

import hashlib
import random

_LETTERS = ("A", "B", "C", "D", "E")
#: the authors' prompt (``ExampleAudioEval``)
PROMPT = ("Provide your best guess of this question. Think step by step.\n\nQuestion: {question}\n\nOptions: {options}\n\n"
          "Write out your guess in the format of [[Letter]], such as [[A]], [[B]], [[C]], [[D]].")


def leave_one_out_prompts(question_id: str, question: str, correct: str, distractors: list[str], *,
                          seed: int = 0) -> list[tuple[str, dict[str, str]]]:
    """The four passes of one question: ``(prompt, letter_mapping)``, each without one distractor.

    Options are shuffled by a generator seeded from ``seed``, the question id and the pass, so a
    rerun asks the same prompts regardless of file order.
    """
    passes = []
    for k in range(len(distractors)):
        options = [correct] + [d for j, d in enumerate(distractors) if j != k]
        digest = hashlib.sha256(f"{seed}|{question_id}|{k}".encode()).digest()
        random.Random(int.from_bytes(digest[:8], "big")).shuffle(options)
        mapping = dict(zip(_LETTERS, options))
        listed = " ".join(f"({x}) {o}" for x, o in mapping.items())
        passes.append((PROMPT.format(question=question, options=listed), mapping))
    return passes
