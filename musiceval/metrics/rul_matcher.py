"""RUListening / RUL-MuchoMusic answer extraction and its four-fold (leave-one-out) protocol.

Zang et al. 2025, "Are you really listening? Boosting Perceptual Awareness in Music-QA
Benchmarks" (yongyizang/AreYouReallyListening, ``ExampleAudioEval/qwen_2_audio.py``). Each
question has a correct answer and four distractors. The leave-one-out protocol asks it four
times, each time without one distractor, with the four remaining options shuffled and lettered
A-D; the prompt asks for the answer "in the format of [[Letter]]".

Answer extraction (:func:`extract_letter`), in order: the *last* ``[[X]]`` (X in A-E); else the
last letter after "answer is / chose / choose / select / guess is / I choose / I select /
I guess" (case-insensitive); else the first of A..E (alphabetical, not textual order) that
appears as "option X", "Option X" or "(X)"; else the first option (in letter order) whose text
appears in the response (case-insensitive); else no answer.

Scoring (:func:`leave_one_out_vote`): the question's answer is the most frequent extracted option
text over its passes that gave one (ties: the one extracted first), correct when it equals the
correct answer; pass-level accuracy counts each pass. A letter outside the shown options (an "E"
with four options) is no answer.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from musiceval.metrics.choice import MATCHERS, UNANSWERED, Output, as_text

LETTERS = ("A", "B", "C", "D", "E")
#: the leave-one-out prompt's letters (four options per pass)
PASS_LETTERS = LETTERS[:4]
_BRACKETED = re.compile(r"\[\[([A-E])\]\]")
_PHRASE = re.compile(r"(?:answer is|chose|choose|select|guess is|I choose|I select|I guess) ([A-E])\b", re.IGNORECASE)


def extract_letter(response: str, letter_mapping: Mapping[str, str]) -> str:
    """The answer letter of ``response`` by the reference rule, or ``""``.

    >>> extract_letter("I think [[B]]. Final: [[C]]", {"A": "x", "B": "y", "C": "z", "D": "w"})
    'C'
    >>> extract_letter("It must be the tabla", {"A": "Flute", "B": "Tabla", "C": "Oud", "D": "Sitar"})
    'B'
    """
    found = _BRACKETED.findall(response)
    if found:
        return found[-1]
    found = _PHRASE.findall(response)
    if found:
        return found[-1].upper()
    for letter in LETTERS:
        if f"option {letter}" in response or f"Option {letter}" in response or f"({letter})" in response:
            return letter
    low = response.lower()
    for letter, text in letter_mapping.items():
        if text and text.lower() in low:
            return letter
    return ""


def match_rul(output: Output, options: Sequence[str]) -> int:
    """The choice registry's matcher form: index of the extracted option, else ``UNANSWERED``."""
    mapping = dict(zip(LETTERS, options))
    letter = extract_letter(as_text(output), mapping)
    return LETTERS.index(letter) if letter and letter in mapping else UNANSWERED


def leave_one_out_vote(pass_answers: Sequence[str]) -> str:
    """The most frequent non-empty answer text (ties: first extracted), ``""`` when none.

    >>> leave_one_out_vote(["Oud", "", "Tabla", "Tabla"])
    'Tabla'
    >>> leave_one_out_vote(["Oud", "Tabla", "", ""])
    'Oud'
    """
    common = Counter(a for a in pass_answers if a).most_common(1)
    return common[0][0] if common else ""


def score_question(correct_answer: str, passes: Sequence[tuple[str, Mapping[str, str]]]) -> dict[str, object]:
    """One question under the four-fold protocol from its passes ``(response, letter_mapping)``.

    Returns ``{"answer", "correct", "pass_correct": [...], "votes": {...}}``.
    """
    answers = []
    for response, mapping in passes:
        letter = extract_letter(response, mapping)
        answers.append(mapping.get(letter, "") if letter else "")
    vote = leave_one_out_vote(answers)
    return {
        "answer": vote,
        "correct": vote == correct_answer,
        "pass_correct": [a == correct_answer for a in answers],
        "votes": dict(Counter(a for a in answers if a)),
    }


MATCHERS.register("rul", match_rul, replace=True)
