"""The live path's exact-answer rules (moved from musiceval/evals/live.py)."""
from __future__ import annotations

import pytest

from musiceval.protocols.live_answers import CHANCE, answer_is_correct, first_number
from musiceval.records import Item

INSTRUMENT = Item(id="i", question="?", choices=("piano", "violin", "flute", "trumpet"), answer="violin",
                  meta={"task": "instrument"})
KEY = Item(id="k", question="?", answer="D minor", meta={"task": "key"})
TEMPO = Item(id="t", question="?", answer="120", meta={"task": "tempo"})
PITCH = Item(id="p", question="?", answer="60", meta={"task": "pitch"})


@pytest.mark.parametrize("item,text,expected", [
    (INSTRUMENT, "It is a violin.", True),
    (INSTRUMENT, "a piano", False),
    (INSTRUMENT, "violin or piano", False),  # two instruments named: not one answer
    (KEY, "The key is D minor.", True),
    (KEY, "D major", False),
    (KEY, "no idea", False),
    (TEMPO, "About 122 BPM", True),  # within 4 %
    (TEMPO, "130 bpm", False),
    (TEMPO, "fast", False),
    (PITCH, "MIDI note 60", True),
    (PITCH, "It is C4", True),
    (PITCH, "It is D4", False),
    (PITCH, "C4 or E4", False),
])
def test_answer_is_correct(item, text, expected):
    assert answer_is_correct(item, text, tempo_tolerance=0.04) is expected


def test_unknown_task_and_chance_table():
    with pytest.raises(ValueError, match="unknown task 'loudness'"):
        answer_is_correct(Item(id="x", question="?", meta={"task": "loudness"}), "loud", tempo_tolerance=0.04)
    assert CHANCE == {"instrument": 0.25, "key": 1 / 24}
    assert first_number("at 97.5 bpm, not 80") == 97.5 and first_number("none") is None
