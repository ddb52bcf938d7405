"""Every parser survives every real CMI-Bench response and arbitrary text: it returns an answer or
raises ParseError (default rules) / returns None or ValueError (toolkit rules), never anything else."""
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from musiceval.parsers import ParseError
from musiceval.parsers.guzheng import events_to_frames, frames_cmi, parse_events
from musiceval.parsers.key import parse_key, parse_key_cmi
from musiceval.parsers.labels import find_labels, is_correct_cmi
from musiceval.parsers.lyrics import clean_lyrics, clean_lyrics_cmi, strip_prefix, strip_prefix_cmi
from musiceval.parsers.melody import parse_melody, parse_melody_cmi
from musiceval.parsers.numbers import parse_midi_pitch, parse_rating, parse_rating_cmi
from musiceval.parsers.times import parse_times, parse_times_cmi

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "cmi-bench" / "outputs"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mir" / "outputs"


def _default(fn, text):
    try:
        fn(text)
    except ParseError:
        pass


def _all_parsers(text: str) -> None:
    for fn in (parse_key, parse_times, parse_rating, parse_midi_pitch, parse_melody):
        _default(fn, text)
    try:
        events_to_frames(parse_events(text))
    except ParseError:
        pass
    parse_key_cmi(text)
    parse_rating_cmi(text)
    frames_cmi(text)
    parse_melody_cmi(text)
    try:
        parse_times_cmi(text)
    except ValueError:
        pass
    clean_lyrics(strip_prefix(text))
    clean_lyrics_cmi(strip_prefix_cmi(text))
    find_labels(text, ["rock", "hiphop", "lip_trill"])
    is_correct_cmi(text, "rock", ["rock", "pop"])


def _responses(root: Path) -> list[str]:
    out = []
    for f in sorted(root.glob("*/*.jsonl")):
        out.extend(r["response"] for r in json.loads(f.read_text(encoding="utf-8")) if isinstance(r.get("response"), str))
    return out


def test_parsers_survive_fixture_responses():
    responses = _responses(FIXTURES)
    assert len(responses) > 4000
    for text in responses:
        _all_parsers(text)


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/cmi-bench not present (wider real-output coverage)")
def test_parsers_survive_every_shared_response():
    # distinct responses only: the files repeat a few refusals thousands of times
    for text in set(_responses(SHARED)):
        _all_parsers(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_parsers_survive_arbitrary_text(text):
    _all_parsers(text)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["[", "]", "(", ")", "'", ",", "0.5", "s", ":", "C4", "{", "}", "Vibrato", " ", "-", "1:0"]), max_size=60))
def test_parsers_survive_structured_garbage(tokens):
    _all_parsers("".join(tokens))


def test_huge_looping_answers_are_handled():
    _all_parsers("0.54s, " * 50000)
    _all_parsers("go " * 100000)
    _all_parsers("[" * 10000)
