"""Multiple-choice QA (MuChoMusic, docs/protocols/choice.md) beyond the generic gates.

The declared model's multiple-choice answer files are gated in ``test_model_gates.py``: accuracy
beats the strongest answer-blind strategy (a uniform guess, exact binomial, clustered when several
questions share a track; the best constant answer; the answer permutation: one gate), the
instruction-following rate (parse rate) is at least ``[choice] min_parse_rate``, and "the model
listens" (accuracy drops with white noise, a random track, or no audio) wherever the answers hold
those conditions. This module adds:

- the accuracy / IFR breakdown per knowledge and reasoning dimension, distractor setting,
  condition and run (recorded in the report);
- the model's accuracy against the human accuracy its benchmark's authors published (the answers
  entry's ``human_baselines``, which ``musiceval run`` copies from the catalogue): one FINDING per
  task or subset with a figure, never a gate (docs/benchmarks.md, "Human baselines");
- a live model (a ``live`` spec in the config or ``--musiceval-model hf:...``) with
  ``--musiceval-data-dir DIR`` holding ``DIR/choice/manifest.jsonl`` and the audio: every question
  is asked in ``[choice] runs`` shuffled runs with ``n_examples`` in-context examples under the
  conditions correct, text_only, noise and random (answers cached under the cache dir); the answers
  become the answer set a recorded file gives and go through ``ChoiceProtocol.from_answers``, then
  the same generic gates run on them.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from musiceval.human_baselines import position, read_human_baselines
from musiceval.skip_reasons import NOT_APPLICABLE
from musiceval.protocols import checks

#: the tests and fixtures this module contributes (``musiceval.evals.release_gates`` gathers them)
__all__ = ["test_accuracy_per_dimension_is_recorded", "test_accuracy_against_published_human_accuracy", "live_choice",
           "test_live_model_gates"]
PROTOCOL = "choice"
LIVE_MANIFEST = Path("choice") / "manifest.jsonl"


def _rows(result) -> list[dict]:
    metrics = result.metrics()
    keys = ("accuracy", "ifr", "unanswered")

    def row(slice_: str, value: str, block: dict) -> dict:
        return {"slice": slice_, "value": value, **{k: block.get(k) for k in keys}}

    rows = [row("overall", "correct audio", metrics)]
    for family, dims in metrics["per_dimension"].items():
        rows += [row(family, d, block) for d, block in dims.items()]
    for name, block in metrics.get("per_distractor_setting", {}).items():
        rows.append(row("distractors", name, block))
    for name, block in metrics.get("per_condition", {}).items():
        rows.append(row("condition", name, block))
    return rows


def test_accuracy_per_dimension_is_recorded(run, gate):
    gate.record_table(PROTOCOL, f"{run.model} {run.source}: accuracy and IFR per dimension ({run.result.matcher} matcher)",
                      _rows(run.result))


def test_accuracy_against_published_human_accuracy(source, run, gate):
    """One FINDING per published human figure of the source's benchmark: the model's accuracy with
    the interval every gate uses (clustered by track), the figure and its source, and whether the
    figure lies above, inside or below the interval. A catalogue entry is one task or subset (MMAU's
    music questions), so each figure is set against all of the source's items. None: nothing recorded."""
    figures = read_human_baselines(source.options.get("human_baselines", {}), f"{source.id}: human_baselines")
    if not figures:
        return
    scores = run.scores("accuracy")
    for subset, human in figures.items():
        name = f"{run.model} {run.source}: accuracy against published human accuracy ({subset})"
        scale = run.metric_info("accuracy").scale
        ci = gate.interval(scores.values, scores.groups, name=name, scale=scale)  # the interval interval_finding records
        people = f", {human.n} people" if human.n is not None else ""
        detail = (f"model {scores.values.mean():.2f} [{ci.low:.2f}, {ci.high:.2f}] vs human {human.accuracy:.2f}{people}, "
                  f"the human figure lies {position(human.accuracy, ci.low, ci.high)} the model's interval; "
                  f"source: {human.source}; a reference line, not a gate")
        gate.interval_finding(scores, name=name, detail=detail, protocol=PROTOCOL, metric="accuracy", scale=scale)


@pytest.fixture(scope="module")
def live_choice(model_spec, musiceval_suite, data_dir, musiceval_seed, musiceval_cache_dir):
    """The live model's answers to the manifest's questions, scored by :meth:`ChoiceProtocol.from_answers
    <musiceval.protocols.choice.ChoiceProtocol.from_answers>` as a recorded answer file is."""
    from musiceval.data.muchomusic import load_choice_manifest
    from musiceval.generate import MODEL_CONDITIONS
    from musiceval.models import load_model
    from musiceval.models.cache import ResponseCache
    from musiceval.protocols.base import ProtocolSettings
    from musiceval.protocols.choice import ChoiceProtocol
    from musiceval.protocols.choice.engine import generate_choice_answers

    live = musiceval_suite.live_models()
    if not live:
        pytest.skip(f"{NOT_APPLICABLE}no live model declared (a 'live' spec in the config or --musiceval-model hf:...)")
    manifest = Path(data_dir) / LIVE_MANIFEST if data_dir is not None else None
    if manifest is None or not manifest.is_file():
        pytest.skip(f"{NOT_APPLICABLE}the live multiple-choice gates need --musiceval-data-dir DIR with "
                    f"DIR/{LIVE_MANIFEST.as_posix()} (id, question, choices, answer letter, audio path) and the audio")
    cfg = musiceval_suite.thresholds[PROTOCOL]
    items, failures = load_choice_manifest(manifest)
    model = load_model(model_spec)
    try:
        answers = generate_choice_answers(model, items, data_dir=data_dir, conditions=MODEL_CONDITIONS,
                                          runs=int(cfg["runs"]), n_examples=int(cfg["n_examples"]), seed=musiceval_seed,
                                          cache=ResponseCache(Path(musiceval_cache_dir) / "responses"),
                                          model_name=live[0].name, source="live MuChoMusic")
    finally:
        model.close()
    answers = dataclasses.replace(answers, failures=[*failures, *answers.failures])  # the manifest's bad rows first
    return ChoiceProtocol.from_answers(answers, ProtocolSettings(seed=musiceval_seed, options={"matcher": cfg["matcher"]}))


@pytest.mark.musiceval_live_model
def test_live_model_gates(live_choice, gate, thresholds):
    checks.beats_chance(gate, live_choice, "accuracy")
    checks.parse_rate(gate, live_choice, float(thresholds[PROTOCOL]["min_parse_rate"]))
    checks.listens(gate, live_choice, margin=float(thresholds[PROTOCOL]["listens_margin"]))
    gate.record_table(PROTOCOL, f"{live_choice.model}: live multiple choice", _rows(live_choice.result))
