"""Release gates for multiple-choice music QA (MuChoMusic protocol, SPEC section 3).

Embedded default (``--model recorded``): MiDashengLM-7B's recorded answers to the first 200
MuChoMusic questions (``fixtures/choice/dev_midashenglm.jsonl``), matched with the published
MuChoMusic rule (``[choice] matcher`` in thresholds.toml).

Other sources of answers:

- ``--data-dir DIR`` with ``DIR/choice/responses.jsonl`` in musiceval's multiple-choice layout
  (see :mod:`musiceval.data.muchomusic`): replaces the embedded default; records under the
  conditions ``text_only``, ``noise`` and ``random`` enable the baseline and audio-attention
  gates (write them with :meth:`musiceval.data.choice_prompts.ChoicePrompt.to_record`);
- ``--model recorded:FILE``: the same, from FILE (musiceval, dasheng or official MuChoMusic
  evaluation layout);
- a live model (``--model hf:...``, ``openai-compatible:...``) with ``--data-dir DIR`` holding
  ``DIR/choice/manifest.jsonl`` (:func:`musiceval.data.muchomusic.load_choice_manifest`) and the
  audio: every question is asked in ``runs`` shuffled runs with ``n_examples`` in-context
  examples under the conditions correct, text_only, noise and random (answers cached under
  ``--cache-dir``), so every gate below runs.

Gates: accuracy beats chance (exact binomial; clustered when several questions share a track),
IFR at or above its threshold, accuracy beats the text-only baseline (exact McNemar), and the
audio attention test: accuracy drops significantly (exact McNemar) with white noise and with a
random track instead of the question's audio.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from musiceval.scoring.choice import ChoiceResult, detect_format, generate_choice_records, score_file, score_records

EMBEDDED = Path("choice") / "dev_midashenglm.jsonl"
DATA_DIR_RESPONSES = Path("choice") / "responses.jsonl"
LIVE_MANIFEST = Path("choice") / "manifest.jsonl"
PROTOCOL = "choice"

HOW_TO_PROVIDE = (
    "give --data-dir DIR with DIR/choice/responses.jsonl holding the same prompts answered under "
    "condition {condition!r} (musiceval multiple-choice layout, one JSON object per line with "
    "item_id, question, choices, answer, condition, text; ChoicePrompt.to_record writes it), or "
    "--model recorded:FILE with such records; or run a live model (--model hf:...) with "
    "--data-dir DIR holding DIR/choice/manifest.jsonl and the audio"
)


def _live(model_spec: str, data_dir, cache_dir, seed: int, cfg: dict) -> ChoiceResult:
    """Ask a live model every question under every condition (audio from ``--data-dir``)."""
    from musiceval.data.muchomusic import load_choice_manifest
    from musiceval.generate import MODEL_CONDITIONS
    from musiceval.models import load_model
    from musiceval.models.cache import ResponseCache

    manifest = Path(data_dir) / LIVE_MANIFEST if data_dir is not None else None
    if manifest is None or not manifest.is_file():
        pytest.skip(
            f"--model {model_spec}: the multiple-choice gates need the questions and their audio; give "
            f"--data-dir DIR with DIR/{LIVE_MANIFEST.as_posix()} (one JSON object per line: id, question, "
            "choices, answer letter, audio path relative to DIR; optional knowledge, reasoning, "
            "distractor_types), e.g. written from muchomusic.csv with load_muchomusic_csv"
        )
    items, failures = load_choice_manifest(manifest)
    model = load_model(model_spec)
    try:
        loaded = generate_choice_records(
            model, items, data_dir=data_dir, conditions=MODEL_CONDITIONS, runs=int(cfg["runs"]),
            n_examples=int(cfg["n_examples"]), seed=seed, cache=ResponseCache(Path(cache_dir) / "responses"),
        )
    finally:
        model.close()
    return score_records(loaded.records, cfg["matcher"], failures + loaded.failures)


@pytest.fixture(scope="module")
def choice(model_spec, fixtures_dir, data_dir, thresholds, musiceval_seed, musiceval_cache_dir) -> ChoiceResult:
    """Matched multiple-choice answers of the model under test, every condition available."""
    cfg = thresholds["choice"]
    if model_spec.startswith("recorded:"):
        path = Path(model_spec.partition(":")[2])
        if not path.is_file():
            pytest.fail(f"--model {model_spec}: file not found; pass recorded:<existing file>")
        return score_file(str(path), detect_format(path), cfg["matcher"])
    if model_spec != "recorded":
        return _live(model_spec, data_dir, musiceval_cache_dir, musiceval_seed, cfg)
    if data_dir is not None and (Path(data_dir) / DATA_DIR_RESPONSES).is_file():
        return score_file(str(Path(data_dir) / DATA_DIR_RESPONSES), "musiceval", cfg["matcher"])
    return score_file(str(Path(fixtures_dir) / EMBEDDED), "dasheng", cfg["matcher"])


def _available(choice: ChoiceResult, condition: str, gate, purpose: str) -> bool:
    """True when ``condition`` was recorded; otherwise skip (a FAIL under --strict) naming the fix."""
    if condition in choice.conditions():
        return True
    gate.skip(f"{purpose}: no recorded answers under condition {condition!r} for "
              f"{choice.model}; " + HOW_TO_PROVIDE.format(condition=condition))
    return False


def _report_rows(choice: ChoiceResult) -> list[dict]:
    """Accuracy / IFR / unanswered overall, per dimension, per distractor setting and condition."""
    metrics = choice.metrics()
    keys = ("n", "accuracy", "ifr", "unanswered")

    def row(slice_: str, value: str, block: dict) -> dict:
        return {"slice": slice_, "value": value, **{k: block.get(k) for k in keys}}

    rows = [row("overall", "correct audio", {**metrics, "n": len(choice.select("correct"))})]
    for family, dims in metrics["per_dimension"].items():
        rows += [row(family, d, block) for d, block in dims.items()]
    for name in metrics.get("per_distractor_setting", {}):
        rows.append(row("distractors", name, {**metrics["per_distractor_setting"][name],
                                              "n": len(choice.select("correct", name))}))
    for name, block in metrics.get("per_condition", {}).items():
        rows.append(row("condition", name, {**block, "n": len(choice.select(name))}))
    if "runs" in metrics:
        spread = metrics["runs"]["accuracy"]
        rows.append(row("runs", f"{spread['n_runs']} shuffles: sd {spread['std']:.4f}, "
                                f"range {spread['min']:.4f}-{spread['max']:.4f}", {"accuracy": spread["mean"]}))
    return rows


def test_choice_accuracy_beats_chance(choice, gate, thresholds):
    """MiDashengLM (or the model under test) answers above the 25 % chance of four options."""
    metrics = choice.metrics()
    chance = thresholds["choice"]["chance"]
    gate.record_table(PROTOCOL, f"{choice.model} multiple-choice results ({choice.matcher} matcher)",
                      _report_rows(choice))
    bars = {"correct audio": metrics["accuracy"], "chance": chance}
    bars.update({c: b["accuracy"] for c, b in metrics.get("per_condition", {}).items()})
    gate.record_bars(PROTOCOL, f"{choice.model} multiple-choice accuracy by condition", bars, ylabel="accuracy")
    gate.binomial_greater(choice.item_scores("accuracy"), chance,
                          name=f"{choice.model} multiple-choice accuracy beats {chance * 100:g} % chance",
                          protocol=PROTOCOL, metric="accuracy")


def test_choice_instruction_following_rate_meets_threshold(choice, gate, thresholds):
    """Nearly every answer maps to one of the options (IFR)."""
    minimum = thresholds["choice"]["min_ifr"]
    gate.at_least(choice.item_scores("ifr"), minimum,
                  name=f"{choice.model} instruction-following rate at least {minimum:.0%}",
                  protocol=PROTOCOL, metric="ifr")


def test_choice_accuracy_beats_text_only_baseline(choice, gate):
    """The model answers better with the audio than from the text of the question alone."""
    if not _available(choice, "text_only", gate, "text-only baseline"):
        return
    gate.mcnemar_greater(choice.item_scores("accuracy"), choice.item_scores("accuracy", "text_only"),
                         name=f"{choice.model} accuracy beats its text-only baseline",
                         protocol=PROTOCOL, metric="accuracy")


def test_choice_accuracy_drops_with_white_noise(choice, gate):
    """Audio attention test: replacing the audio with white noise costs accuracy."""
    if not _available(choice, "noise", gate, "audio attention test (white noise)"):
        return
    gate.mcnemar_greater(choice.item_scores("accuracy"), choice.item_scores("accuracy", "noise"),
                         name=f"{choice.model} accuracy drops with white noise instead of audio",
                         protocol=PROTOCOL, metric="accuracy")


def test_choice_accuracy_drops_with_random_track(choice, gate):
    """Audio attention test: another question's track instead of the right one costs accuracy."""
    if not _available(choice, "random", gate, "audio attention test (random track)"):
        return
    gate.mcnemar_greater(choice.item_scores("accuracy"), choice.item_scores("accuracy", "random"),
                         name=f"{choice.model} accuracy drops with a random track instead of the audio",
                         protocol=PROTOCOL, metric="accuracy")
