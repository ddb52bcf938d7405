"""Exact answers to the synthesised live-model questions (``musiceval/evals/audio/manifest.jsonl``).

The live path asks a model one question per synthesised clip whose ground truth is the MIDI it
was rendered from; :func:`answer_is_correct` says whether a free-text response states it, and
:data:`CHANCE` is the rate of a uniform guess per task (the chance a gate tests against). Only the
synthesised-questions protocol (:class:`~musiceval.protocols.synth.protocol.SynthProtocol`) scores
with them (docs/evaluate-your-model.md).
"""
from __future__ import annotations

import re

from musiceval.records import Item

#: chance of a uniform guess among the task's classes: 4 instruments, 24 keys; tempo and pitch
#: answers are open numbers and are left out of the chance gate.
CHANCE = {"instrument": 1 / 4, "key": 1 / 24}
#: tasks :func:`answer_is_correct` knows
TASKS = ("instrument", "key", "tempo", "pitch")


def first_number(text: str) -> float | None:
    """The first (unsigned, decimal) number written in ``text``, or None."""
    match = re.search(r"\d+(?:\.\d+)?", text)
    return float(match.group()) if match else None


def answer_is_correct(item: Item, text: str, *, tempo_tolerance: float) -> bool:
    """Whether a response states the clip's ground truth (rules per task, documented in the report).

    instrument: the response names exactly one of the four instruments, the right one;
    key: :func:`musiceval.parsers.key.parse_key` finds exactly one key, the right one;
    tempo: the first number is within ``tempo_tolerance`` (relative; 4 % is MIREX's "Accuracy 1");
    pitch: the first number equals the MIDI pitch, or the one note name given is the right one.

    Raises
    ------
    ValueError
        The item's ``meta["task"]`` is none of :data:`TASKS`.
    """
    task = item.meta["task"]
    if task == "instrument":
        from musiceval.parsers.labels import predict_single_label

        return predict_single_label(text, item.choices) == item.answer
    if task == "key":
        from musiceval.parsers import ParseError
        from musiceval.parsers.key import parse_key

        try:
            return parse_key(text) == item.answer
        except ParseError:
            return False
    value = first_number(text)
    if task == "tempo":
        return value is not None and abs(value - float(item.answer)) <= tempo_tolerance * float(item.answer)
    if task == "pitch":
        if value is not None and value == float(item.answer):
            return True
        notes = re.findall(r"\b([A-G](?:#|b)?-?\d)\b", text)
        if len(set(notes)) == 1:
            from musiceval.parsers.numbers import note_name_to_midi

            try:
                return note_name_to_midi(notes[0]) == int(item.answer)
            except (ValueError, KeyError):
                return False
        return False
    raise ValueError(f"item {item.id!r}: unknown task {task!r}")
