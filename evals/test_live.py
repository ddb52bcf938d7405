"""Release gates for the live-model path: generate -> cache -> score on audio with exact answers.

Data: ``fixtures/audio/`` (``scripts/make_audio_fixtures.py``): 15 synthesised 16 kHz clips whose
ground truth is the MIDI they were rendered from (instrument, key, tempo with beat times, MIDI
pitch), one question each, asked under the conditions correct, noise and text_only.

Model:

- embedded default (no live model declared; also ``recorded:FILE``, whose answers are about other
  audio): a tiny randomly initialised Qwen2-Audio that the session builds in a temporary
  directory and loads through the real ``hf:`` adapter on CPU. Its answers are noise: the gates
  check the machinery (every item answered, settings recorded, a rerun served from the cache),
  and the accuracy is a FINDING, never a gate;
- a live model (``--musiceval-model hf:<dir>``, ``openai-compatible:<url>#<model>``, ...): the same gates,
  plus (``gpu``-marked) accuracy on the synthesised questions beats chance.

Run a real model: ``pytest evals/test_live.py --musiceval-model hf:Qwen/Qwen2-Audio-7B-Instruct -m gpu``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from musiceval.generate import GenerationResult, generate_responses, load_manifest
from musiceval.models.base import GenerationSettings
from musiceval.models.cache import ResponseCache
from musiceval.records import Item, ItemScores

PROTOCOL = "live"
CONDITIONS = ("correct", "noise", "text_only")
pytestmark = pytest.mark.xdist_group("music_lm")


@dataclass
class LiveRun:
    spec: str
    items: list[Item]
    first: GenerationResult
    rerun: GenerationResult
    settings: GenerationSettings
    real_model: bool


@pytest.fixture(scope="module")
def live_run(live_music_lm, fixtures_dir, tmp_path_factory, musiceval_seed) -> LiveRun:
    model, real = live_music_lm
    manifest = Path(fixtures_dir) / "audio" / "manifest.jsonl"
    items, bad = load_manifest(manifest)
    assert not bad, f"{manifest}: {bad}"
    settings = GenerationSettings(temperature=0.0, max_tokens=64 if real else 8, seed=musiceval_seed)
    cache_dir = tmp_path_factory.mktemp("live-responses")  # fresh: the rerun must come from it
    kwargs = dict(conditions=CONDITIONS, data_dir=manifest.parent, settings=settings)
    first = generate_responses(model, items, cache=ResponseCache(cache_dir), **kwargs)
    rerun = generate_responses(model, items, cache=ResponseCache(cache_dir), **kwargs)
    return LiveRun(model.spec, items, first, rerun, settings, real)


def _first_number(text: str) -> float | None:
    match = re.search(r"\d+(?:\.\d+)?", text)
    return float(match.group()) if match else None


def answer_is_correct(item: Item, text: str, *, tempo_tolerance: float) -> bool:
    """Whether a response states the clip's ground truth (rules per task, documented in the report).

    instrument: the response names exactly one of the four instruments, the right one;
    key: :func:`musiceval.parsers.key.parse_key` finds exactly one key, the right one;
    tempo: the first number is within ``tempo_tolerance`` (relative; 4 % is MIREX's "Accuracy 1");
    pitch: the first number equals the MIDI pitch, or the one note name given is the right one.
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
    value = _first_number(text)
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


# chance of a uniform guess among the task's classes: 4 instruments, 24 keys; tempo and pitch
# answers are open numbers and are left out of the chance gate.
CHANCE = {"instrument": 1 / 4, "key": 1 / 24}


def correctness(run: LiveRun, condition: str, tasks, tolerance: float) -> ItemScores:
    texts = {r.item_id: r.text for r in run.first.responses if r.condition == condition and r.meta["chunk"] == 0}
    chosen = [i for i in run.items if i.meta["task"] in tasks and i.id in texts]
    return ItemScores(
        metric="accuracy", condition=condition, ids=tuple(i.id for i in chosen),
        values=[float(answer_is_correct(i, texts[i.id], tempo_tolerance=tolerance)) for i in chosen],
        groups=tuple(i.group or i.id for i in chosen),
    )


def test_every_item_is_answered_under_every_condition(live_run, gate, thresholds):
    answered = {(r.item_id, r.condition) for r in live_run.first.responses}
    values = {f"{i.id}/{c}": float((i.id, c) in answered) for i in live_run.items for c in CONDITIONS}
    scores = ItemScores.from_mapping("answered", values, failures=live_run.first.failures)
    gate.at_least(scores, float(thresholds[PROTOCOL]["min_answered_rate"]),
                  name="live: every (item, condition) gets a response", protocol=PROTOCOL)


def test_a_rerun_is_served_from_the_cache_with_identical_answers_and_settings(live_run, gate):
    first = {(r.item_id, r.condition, r.meta["chunk"]): r for r in live_run.first.responses}
    values = {}
    for r in live_run.rerun.responses:
        original = first.get((r.item_id, r.condition, r.meta["chunk"]))
        same = (original is not None and r.meta["cached"] and r.text == original.text
                and r.meta["settings"] == live_run.settings.as_dict() == original.meta["settings"])
        values[f"{r.item_id}/{r.condition}/{r.meta['chunk']}"] = float(same)
    for key in first:
        values.setdefault(f"{key[0]}/{key[1]}/{key[2]}", 0.0)
    gate.at_least(ItemScores.from_mapping("served_from_cache", values), 1.0,
                  name="live: a rerun reuses every cached response", protocol=PROTOCOL)


def test_accuracy_on_synthesised_questions_is_reported(live_run, gate, thresholds):
    tolerance = float(thresholds[PROTOCOL]["tempo_tolerance"])
    rows = []
    for condition in CONDITIONS:
        for task in ("instrument", "key", "tempo", "pitch"):
            s = correctness(live_run, condition, {task}, tolerance)
            rows.append({"condition": condition, "task": task, "n": s.n, "accuracy": s.mean()})
    gate.record_table(PROTOCOL, f"accuracy on fixtures/audio ({live_run.spec})", rows)
    overall = correctness(live_run, "correct", {"instrument", "key", "tempo", "pitch"}, tolerance)
    gate.finding("live: accuracy on the synthesised questions (correct audio)", estimate=overall.mean(), n=overall.n,
                 detail=f"model {live_run.spec}; per task and condition in the table", protocol=PROTOCOL,
                 metric="accuracy")


@pytest.mark.gpu
def test_a_real_model_beats_chance_on_instruments_and_keys(live_run, gate, thresholds):
    if not live_run.real_model:
        gate.skip("needs a real model: pass --musiceval-model hf:<Qwen2-Audio dir> or openai-compatible:<url>#<model>",
                  applicable=False)
    scores = correctness(live_run, "correct", set(CHANCE), float(thresholds[PROTOCOL]["tempo_tolerance"]))
    # Items mix chance rates (1/4, 1/24). The count of correct guesses is Poisson-binomial; its upper
    # tail is bounded by the binomial's at the mean rate (Hoeffding 1956, for counts >= n*p0 + 1),
    # so the exact binomial test at the mean rate is conservative.
    p0 = sum(CHANCE[i.meta["task"]] for i in live_run.items if i.id in scores.ids) / max(scores.n, 1)
    gate.binomial_greater(scores, p0, name="live: instrument and key accuracy beats chance", protocol=PROTOCOL)
