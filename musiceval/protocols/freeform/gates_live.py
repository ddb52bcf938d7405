"""Free-form gates on a live ``--model`` (docs/protocols/freeform.md): do its descriptions fit the audio they were
given better than random audio or noise?

Data: ``musiceval/evals/audio/freeform.jsonl`` (``scripts/make_freeform_audio_fixtures.py``): one
"Describe this music" question per synthesised clip of ``musiceval/evals/audio`` (15), each with two
reference descriptions **template-written from the clip's MIDI ground truth** (instrument, notes,
key, tempo, pitch), not human or model text. The model answers under conditions correct, random
(another clip's audio, a seeded derangement) and noise (white noise of the clip's length and RMS)
through :func:`musiceval.generate.generate_responses` into a fresh
:class:`~musiceval.models.cache.ResponseCache`. The generated answers become the
:class:`~musiceval.data.answers.AnswerSet` a recorded answer file gives
(:meth:`musiceval.generate.GenerationResult.answer_set`) and are scored by
:meth:`FreeformProtocol.from_answers <musiceval.protocols.freeform.protocol.FreeformProtocol.from_answers>`,
the path every recorded free-form file takes (docs/extending.md, "A protocol"): the first chunk's
answer of a chunking model, the Random draws averaged per item, the run's embedding cache shared.

Metrics per condition: sentence cosine (bundled MiniLM; always), CLAPText against the references
and the reference-free CLAPAudio against the item's *own* clip (Random: another clip's answer vs
this clip), when CLAP weights load; otherwise those tests ``gate.skip`` naming
``huggingface-cli download laion/larger_clap_music`` (a failure under ``--strict``).

Gates: Correct > Random and Correct > Noise, paired by item (``gate.paired_greater``) for a real
model. On the embedded default (no live model declared: no recorded answers exist for these clips)
the model is the tiny randomly initialised Qwen2-Audio of ``musiceval/protocols/synth/gates.py`` (CPU, 8 tokens):
its answers are noise, so the same comparisons are recorded as FINDINGs (``gate.paired_finding``)
and the embedded default stays honest and green.

Run a real model: ``pytest evals/ --musiceval-model hf:Qwen/Qwen2-Audio-7B-Instruct`` (every gate; ``-k describe`` for these).
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from musiceval.audio import SYNTHESISED_AUDIO as AUDIO

from musiceval.generate import generate_responses, load_manifest, require_answers
from musiceval.models.base import GenerationSettings
from musiceval.models.cache import ResponseCache
from musiceval.protocols.base import ProtocolSettings
from musiceval.protocols.freeform.protocol import FreeformProtocol
from musiceval.keys import margin_for
from musiceval.redact import redact, redacted_repr

#: the tests and fixtures this module contributes (``musiceval.evals.release_gates`` gathers them)
__all__ = [
    "live_freeform",
    "clap_or_error",
    "test_answers_describe_their_own_audio_better_than_other_audio",
    "test_live_condition_means_are_reported",
]
PROTOCOL = "freeform"
#: the conditions the live model is asked under for the free-form questions
ASKED_CONDITIONS = ("correct", "random", "noise")
METRICS = ("sentence_cosine", "clap_text", "clap_audio")
pytestmark = pytest.mark.xdist_group("music_lm")


@dataclass
class LiveFreeform:
    #: the model spec with its credentials masked (tables and details quote it)
    spec: str
    real_model: bool
    run: FreeformProtocol

    def __repr__(self) -> str:  # pytest prints fixture values with a failing test: never a credential
        return redacted_repr(self)


@pytest.fixture(scope="module")
def live_freeform(live_music_lm, thresholds, embedding_cache, musiceval_seed, tmp_path_factory):
    model, real = live_music_lm
    cfg = thresholds[PROTOCOL]
    questions = AUDIO / cfg["live_questions"]
    items, bad = load_manifest(questions)
    assert not bad, f"{questions}: {bad}"
    settings = GenerationSettings(temperature=0.0, max_tokens=int(cfg["live_max_tokens"]) if real else 8, seed=musiceval_seed)
    result = generate_responses(model, items, conditions=ASKED_CONDITIONS, data_dir=questions.parent, settings=settings,
                                cache=ResponseCache(tmp_path_factory.mktemp("freeform-responses")),
                                random_draws=int(cfg["random_draws"]))
    require_answers(result, redact(model.spec),
                    f"{questions.name} ({len(items)} questions x {len(ASKED_CONDITIONS)} conditions)")
    answers = result.answer_set(items, model=redact(model.spec), source=str(questions))
    run = FreeformProtocol.from_answers(answers, ProtocolSettings(seed=musiceval_seed, options=live_options(
        cfg, embedding_cache, questions.parent)))
    return LiveFreeform(redact(model.spec), real, run)


def live_options(cfg, embedding_cache, data_dir) -> dict:
    """The protocol options of the live run: the metrics these gates compare (BERTScore is not
    asked for), the ``[freeform]`` encoder, the Random draw count, the session's embedding cache and
    the clips' folder (CLAPAudio scores each answer against its own clip)."""
    return {"metrics": list(METRICS), "sentence_encoder": cfg["sentence_encoder"],
            "random_draws": int(cfg["random_draws"]), "embedding_cache": embedding_cache, "data_dir": data_dir}


@pytest.fixture(scope="module")
def clap_or_error(live_freeform):
    """The CLAP encoder (text and audio towers), or the FileNotFoundError naming the download."""
    try:
        return live_freeform.run.evaluation.models.audio_encoder()
    except FileNotFoundError as exc:
        return exc


@pytest.mark.parametrize("baseline", ("random", "noise"))
@pytest.mark.parametrize("metric", METRICS)
def test_answers_describe_their_own_audio_better_than_other_audio(live_freeform, gate, thresholds, clap_or_error,
                                                                  metric, baseline):
    if metric.startswith("clap") and isinstance(clap_or_error, Exception):
        gate.skip(f"{metric}: {clap_or_error}")
    run = live_freeform.run
    correct, other = run.scores(metric, "correct"), run.scores(metric, baseline)
    name = f"{metric}: live correct > {baseline}"
    scale = run.metric_info(metric).scale
    if live_freeform.real_model:
        gate.paired_greater(correct, other, name=name, margin=margin_for(thresholds[PROTOCOL], metric),
                            protocol=PROTOCOL, metric=metric, scale=scale)
    else:
        gate.paired_finding(correct, other, name=f"{metric}: live correct - {baseline} (tiny random model)",
                            protocol=PROTOCOL, metric=metric, scale=scale,
                            detail=f"{live_freeform.spec}: a randomly initialised model's answers are noise; "
                                   "the gate applies to real models only")


def test_live_condition_means_are_reported(live_freeform, gate):
    run = live_freeform.run
    rows = []
    for condition in ASKED_CONDITIONS:
        s = run.scores("sentence_cosine", condition)
        not_answered = sum(f.reason.startswith(f"{condition}") for f in run.failures)
        rows.append({"condition": condition, "n": s.n, "n_failed": len(s.failures) + not_answered,
                     "sentence_cosine": round(s.mean(), 4)})
    assert all(r["n"] + r["n_failed"] == len(run.evaluation.items) for r in rows), rows  # every item scored or counted
    gate.record_table(PROTOCOL, f"live free-form on musiceval/evals/audio ({live_freeform.spec})", rows)
