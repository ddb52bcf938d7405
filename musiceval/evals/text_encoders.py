"""Release gates for the musical knowledge of text encoders (AudioSet triplets, docs/protocols/text-encoders.md).

The encoders probed are those inside the suite config's metrics (``[text_encoders] encoders``).
Triplets are generated from the bundled AudioSet ontology's "Music genre" and
"Musical instrument" subtrees (a seeded sample of ``[text_encoders] max_triplets`` per subtree,
scored under the ``prompts`` listed in thresholds.toml), embedded by each encoder of
``[text_encoders] encoders``: the bundled all-MiniLM-L6-v2 (``minilm``) and the CLAP text tower
used by CLAPText (``clap:``, skipped with the download command when its weights are absent).

Gates, per encoder and subtree:

- triplet accuracy beats chance (1/2): per triplet, the fraction of prompts under which
  ``cos(anchor, positive) > cos(anchor, negative)``; bootstrap interval and sign-flip test
  clustered by anchor (triplets sharing an anchor are not independent);
- finding: accuracy on negation triplets (negative "Not music from <label>" etc.) is at or below
  chance, as the published study reports; recorded with a clustered interval, never failing.

The per-prompt accuracies are recorded as a bar plot per encoder and subtree: the
prompt-sensitivity picture.
"""
from __future__ import annotations

import pytest

from musiceval.vocab.audioset import load_ontology
from musiceval.protocols.triplets.formats import generate_triplets, negation_triplets
from musiceval.encoders import load_text_encoder
from musiceval.skip_reasons import NOT_APPLICABLE
from musiceval.metrics.triplets import NEGATION_PROMPTS, PAPER_PROMPTS, mean_std_across_prompts
from musiceval.protocols.triplets.engine import TripletEvaluation, evaluate_triplets

#: the tests and fixtures this module contributes (``musiceval.evals.release_gates`` gathers them)
__all__ = [
    "ontology",
    "encoders",
    "evaluations",
    "subtree",
    "encoder_spec",
    "test_text_encoder_triplet_accuracy_beats_chance",
    "test_text_encoder_negation_accuracy_at_or_below_chance_is_recorded",
]
PROTOCOL = "text_encoders"
#: a triplet is correct when cos(anchor, positive) > cos(anchor, negative): chance is 1/2
CHANCE = 0.5
SUBTREES = ("genre", "instrument")
ENCODER_NAMES = {"minilm": "all-MiniLM-L6-v2", "clap:": "CLAP text tower"}

#: the encoders inside the metrics are the suite's own components: a self-check, never a gate of the model
pytestmark = [pytest.mark.xdist_group("text_encoders"), pytest.mark.musiceval_self_check]


def _config(thresholds) -> dict:
    return thresholds[PROTOCOL]


@pytest.fixture(scope="module")
def ontology():
    return load_ontology()  # the AudioSet ontology shipped with musiceval


@pytest.fixture(scope="module")
def encoders():
    """Encoders loaded once per worker; an unavailable one is kept as its load error."""
    loaded: dict[str, object] = {}

    def get(spec: str):
        if spec not in loaded:
            try:
                loaded[spec] = load_text_encoder(spec)
            except FileNotFoundError as exc:  # weights absent: the message names the download
                loaded[spec] = exc
        return loaded[spec]

    return get


@pytest.fixture(scope="module")
def evaluations(ontology, encoders, thresholds, musiceval_seed, embedding_cache):
    """(encoder spec, subtree, negation?) -> TripletEvaluation, computed once per worker."""
    cfg = _config(thresholds)
    done: dict[tuple[str, str, bool], TripletEvaluation] = {}

    def get(gate, spec: str, subtree: str, negation: bool) -> TripletEvaluation:
        encoder = encoders(spec)
        if isinstance(encoder, Exception):
            gate.skip(f"text encoder {spec!r} unavailable: {encoder}")
        key = (spec, subtree, negation)
        if key not in done:
            make = negation_triplets if negation else generate_triplets
            triplets = make(ontology.subtree(subtree), seed=musiceval_seed, max_triplets=cfg["max_triplets"], name=subtree)
            prompts = NEGATION_PROMPTS if negation else [PAPER_PROMPTS[i] for i in (cfg["prompts"] or range(20))]
            done[key] = evaluate_triplets(encoder, triplets, "negation" if negation else "paper",
                                          cache=embedding_cache, prompts=prompts)
        return done[key]

    return get


@pytest.fixture(params=SUBTREES)
def subtree(request):
    return request.param


@pytest.fixture(params=[pytest.param(spec, id=spec.rstrip(":")) for spec in ENCODER_NAMES])
def encoder_spec(request, thresholds):
    if request.param not in _config(thresholds)["encoders"]:
        pytest.skip(f"{NOT_APPLICABLE}encoder {request.param!r} not listed in [text_encoders] encoders")
    return request.param


def test_text_encoder_triplet_accuracy_beats_chance(encoder_spec, subtree, evaluations, thresholds, gate):
    result = evaluations(gate, encoder_spec, subtree, negation=False)
    name = ENCODER_NAMES.get(encoder_spec, encoder_spec)
    per_prompt = result.per_prompt()
    mean, std = mean_std_across_prompts(per_prompt)
    gate.record_bars(PROTOCOL, f"{name}: {subtree} accuracy per prompt", per_prompt,
                     ylabel=f"triplet accuracy (mean {mean:.3f}, std {std:.3f})")
    gate.greater_than_chance(result.item_scores(f"{subtree}_triplet_accuracy"), CHANCE,
                             name=f"{name} {subtree} triplet accuracy > chance", scale=result.scale)


def test_text_encoder_negation_accuracy_at_or_below_chance_is_recorded(
    encoder_spec, subtree, evaluations, thresholds, gate
):
    result = evaluations(gate, encoder_spec, subtree, negation=True)
    name = ENCODER_NAMES.get(encoder_spec, encoder_spec)
    chance = CHANCE
    scores = result.item_scores(f"{subtree}_negation_accuracy")
    assert scores.n > 0, f"no negation triplets generated for {subtree}"
    ci = gate.interval(scores.values, scores.groups, name=f"{name} {subtree} negation", scale=result.scale)
    verdict = "holds" if ci.low <= chance else "does not hold: the interval lies above chance"
    per_prompt = ", ".join(f"{p!r}: {v:.3f}" for p, v in result.per_prompt().items())
    gate.finding(
        f"{name} {subtree} negation triplet accuracy at or below chance",
        estimate=scores.mean(), ci=(ci.low, ci.high), n=scores.n, metric=scores.metric, scale=result.scale,
        detail=f"finding {verdict}; chance={chance}; clustered by anchor ({ci.method}); per prompt: {per_prompt}",
    )
