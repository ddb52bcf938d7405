"""Release gates for the live-model path: generate -> cache -> score on audio with exact answers.

The generated answers become the :class:`~musiceval.data.answers.AnswerSet` a recorded answer file
gives (:meth:`musiceval.generate.GenerationResult.answer_set`) and are scored by
:class:`~musiceval.protocols.synth.protocol.SynthProtocol`, the path every protocol's answers take.

Data: ``musiceval/evals/audio/`` (``scripts/make_audio_fixtures.py``): 15 synthesised 16 kHz clips whose
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

Run a real model: ``pytest evals/ --musiceval-model hf:Qwen/Qwen2-Audio-7B-Instruct -m gpu``.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from musiceval.audio import SYNTHESISED_AUDIO as AUDIO

from musiceval.generate import GenerationResult, generate_responses, load_manifest, require_answers
from musiceval.models.base import GenerationSettings
from musiceval.models.cache import ResponseCache
from musiceval.protocols.base import ProtocolSettings
from musiceval.protocols.synth.metrics import CHANCE
from musiceval.protocols.synth.protocol import SynthProtocol
from musiceval.records import Item, ItemScores
from musiceval.redact import redact, redacted_repr
from musiceval.protocols.checks import census_at_least
from musiceval.stats.scales import BINARY

#: the tests and fixtures this module contributes (``musiceval.evals.release_gates`` gathers them)
__all__ = [
    "live_run",
    "test_every_item_is_answered_under_every_condition",
    "test_a_rerun_is_served_from_the_cache_with_identical_answers_and_settings",
    "test_accuracy_on_synthesised_questions_is_reported",
    "test_a_real_model_beats_chance_on_instruments_and_keys",
]
PROTOCOL = "live"
#: the conditions the live smoke run asks every synthesised question under
ASKED_CONDITIONS = ("correct", "noise", "text_only")
pytestmark = pytest.mark.xdist_group("music_lm")


@dataclass
class LiveRun:
    #: the model spec with its credentials masked (tables and details quote it)
    spec: str
    items: list[Item]
    first: GenerationResult
    rerun: GenerationResult
    settings: GenerationSettings
    real_model: bool

    def __repr__(self) -> str:  # pytest prints fixture values with a failing test: never a credential
        return redacted_repr(self)


@pytest.fixture(scope="module")
def live_run(live_music_lm, tmp_path_factory, musiceval_seed) -> LiveRun:
    model, real = live_music_lm
    manifest = AUDIO / "manifest.jsonl"
    items, bad = load_manifest(manifest)
    assert not bad, f"{manifest}: {bad}"
    settings = GenerationSettings(temperature=0.0, max_tokens=64 if real else 8, seed=musiceval_seed)
    cache_dir = tmp_path_factory.mktemp("live-responses")  # fresh: the rerun must come from it
    kwargs = dict(conditions=ASKED_CONDITIONS, data_dir=manifest.parent, settings=settings)
    asked = f"{manifest.name} ({len(items)} questions x {len(ASKED_CONDITIONS)} conditions)"
    first = require_answers(generate_responses(model, items, cache=ResponseCache(cache_dir), **kwargs),
                            redact(model.spec), asked)
    rerun = generate_responses(model, items, cache=ResponseCache(cache_dir), **kwargs)
    return LiveRun(redact(model.spec), items, first, rerun, settings, real)


def scored(run: LiveRun, thresholds) -> SynthProtocol:
    """The first run's answers scored as every protocol's are: an answer set, then the protocol."""
    answers = run.first.answer_set(run.items, model=run.spec, source=str(AUDIO / "manifest.jsonl"))
    options = {"tempo_tolerance": float(thresholds[PROTOCOL]["tempo_tolerance"]), "conditions": ASKED_CONDITIONS}
    return SynthProtocol.from_answers(answers, ProtocolSettings(options=options))


def test_every_item_is_answered_under_every_condition(live_run, gate, thresholds):
    answered = {(r.item_id, r.condition) for r in live_run.first.responses}
    values = {f"{i.id}/{c}": float((i.id, c) in answered) for i in live_run.items for c in ASKED_CONDITIONS}
    scores = ItemScores.from_mapping("answered", values, failures=live_run.first.failures)
    census_at_least(gate, scores, float(thresholds[PROTOCOL]["min_answered_rate"]), check="live/answered",
                    name="live: every (item, condition) gets a response", protocol=PROTOCOL, scale=BINARY)


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
    census_at_least(gate, ItemScores.from_mapping("served_from_cache", values), 1.0, check="live/served_from_cache",
                    name="live: a rerun reuses every cached response", protocol=PROTOCOL, scale=BINARY)


def test_accuracy_on_synthesised_questions_is_reported(live_run, gate, thresholds):
    run = scored(live_run, thresholds)
    gate.record_table(PROTOCOL, f"accuracy on musiceval/evals/audio ({live_run.spec})", run.accuracy_table())
    overall = run.scores("accuracy", "correct")
    gate.finding("live: accuracy on the synthesised questions (correct audio)", estimate=overall.mean(), n=overall.n,
                 detail=f"model {live_run.spec}; per task and condition in the table", protocol=PROTOCOL,
                 metric="accuracy")


@pytest.mark.gpu
def test_a_real_model_beats_chance_on_instruments_and_keys(live_run, gate, thresholds):
    if not live_run.real_model:
        gate.skip("needs a real model: pass --musiceval-model hf:<Qwen2-Audio dir> or openai-compatible:<url>#<model>",
                  applicable=False)
    run = scored(live_run, thresholds)
    scores = run.scores("accuracy", "correct", tasks=tuple(CHANCE))
    # Items mix chance rates (1/4, 1/24). The count of correct guesses is Poisson-binomial; its upper
    # tail is bounded by the binomial's at the mean rate (Hoeffding 1956, for counts >= n*p0 + 1),
    # so the exact binomial test at the mean rate is conservative.
    gate.binomial_greater(scores, run.uniform_chance(scores), name="live: instrument and key accuracy beats chance",
                          protocol=PROTOCOL, scale=run.metric_info("accuracy").scale)
