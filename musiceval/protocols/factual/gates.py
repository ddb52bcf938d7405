"""Factual QA gates (docs/protocols/factual.md) beyond the generic ones, and the live-model datasets.

The declared model's factual answer files are gated in ``test_model_gates.py`` (F1 beats its
permutation chance level; "the model listens": Correct beats Random, the answer the same model gave
for another clip with the same prompt; parse rate). This module adds:

- the per-label breakdown of each answer set (recorded in the report);
- live model (``--musiceval-model hf:...`` / ``openai-compatible:...`` or a ``live`` spec in the
  config) with ``--musiceval-data-dir``: the same gates on FMA-small top-level genres (chance about
  1/8) and MusicNet instruments and composers, through
  :func:`musiceval.protocols.factual.live.live_factual` (generate -> cache -> extract -> score; the
  ``[factual]`` thresholds pick the prompt variant and the chunk rule); the tests carry the
  ``dataset`` marker and are not applicable when the data is absent;
- closed questions with a live model (:func:`musiceval.protocols.factual.live.live_closed`): binary
  choice beats a coin flip (exact binomial test); the true/false table's F1 beats its permutation
  chance;
- extractor agreement: when an LLM-extractor cassette exists for an answer file
  (``fixtures/factual/cassettes/agreement_<file stem>.yaml``), the rule and LLM extractors' agreement
  (exact-set rate, mean Jaccard, mean Cohen's kappa per label) is recorded as a finding.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from musiceval.extraction import load_vocabulary
from musiceval.skip_reasons import NOT_APPLICABLE
from musiceval.protocols.factual.engine import FactualResult
from musiceval.protocols.factual.protocol import METRIC_SCALES
from musiceval.stats.scales import BINARY

#: the tests and fixtures this module contributes (``musiceval.evals.release_gates`` gathers them)
__all__ = [
    "test_per_label_breakdown_is_recorded",
    "live",
    "test_live_factual_f1_beats_permutation_chance",
    "test_live_factual_f1_correct_beats_random",
    "live_closed_run",
    "test_live_true_false_f1_beats_permutation_chance",
    "test_live_binary_choice_beats_a_coin_flip",
    "test_rule_extractor_agrees_with_llm_extractor",
]
PROTOCOL = "factual"


def test_per_label_breakdown_is_recorded(run, gate):
    rows = [{"label": label, **row} for label, row in run.result.per_label.items() if row["support"] or row["n_pred"]]
    assert rows, f"{run.model} {run.source}: no label was predicted or true"
    gate.record_table(PROTOCOL, f"{run.model} {run.source}: per-label breakdown (Correct)", rows)


def _report(gate, name: str, result: FactualResult) -> None:
    m = result.metrics
    rows = [{"condition": c, **{k: m[c][k] for k in ("precision", "recall", "f1", "accuracy", "micro_f1", "n")}}
            for c in ("correct", "random") if c in m]
    rows.append({"condition": "chance (permutation)", "f1": m["chance"]["f1"]})
    gate.record_table(PROTOCOL, f"{name}: factual P/R/F1 (rule extractor)", rows)


# ----------------------------------------------------------------------------- live model + datasets


@lru_cache(maxsize=None)
def _fma_items(data_dir: str):
    from musiceval.catalogue.datasets.fma import load_fma

    items, _ = load_fma(Path(data_dir) / "fma" / "fma_metadata", subset="small", audio_dir=Path(data_dir) / "fma" / "fma_small")
    return items


@lru_cache(maxsize=None)
def _musicnet_items(data_dir: str, task: str):
    from musiceval.catalogue.datasets.musicnet import load_musicnet

    root = Path(data_dir) / "musicnet"
    items, _ = load_musicnet(root / "musicnet_metadata.csv", task=task, labels_dir=root, audio_dir=root)
    return items


LIVE = {
    "FMA-small genre": ("fma", lambda d: _fma_items(str(d)), "fma-top"),
    "MusicNet instruments": ("musicnet", lambda d: _musicnet_items(str(d), "instruments"), "musicnet-instruments"),
    "MusicNet composers": ("musicnet", lambda d: _musicnet_items(str(d), "composers"), "musicnet-composers"),
}
LIVE_CASES = [pytest.param(name, marks=pytest.mark.dataset(dataset)) for name, (dataset, _, _) in LIVE.items()]
_live_cache: dict = {}


@pytest.fixture
def live(request, model_spec, data_dir, musiceval_seed, thresholds):
    """``name -> FactualResult`` of the live model on that dataset (one run per session and name)."""
    def get(name: str) -> FactualResult:
        from musiceval.protocols.factual.live import live_factual

        if model_spec == "recorded" or model_spec.startswith("recorded:"):
            pytest.skip(NOT_APPLICABLE + "the FMA / MusicNet factual gates need a live model: pass --musiceval-model hf:<dir> or openai-compatible:<url>")
        if data_dir is None:
            pytest.skip(f"{NOT_APPLICABLE}{name} needs --musiceval-data-dir holding the dataset; see docs for the download instructions")
        cfg = thresholds["factual"]
        key = (name, model_spec, str(data_dir), musiceval_seed, cfg["prompt_variant"], cfg["live_chunks"])
        if key not in _live_cache:
            _, items, vocab = LIVE[name]
            items = items(data_dir)
            if not any(it.audio for it in items):
                pytest.skip(f"no audio found under --musiceval-data-dir {data_dir} for {name}; see the dataset's download instructions")
            run = live_factual(request.getfixturevalue("music_lm"), items, load_vocabulary(vocab), data_dir=data_dir,
                               cache=request.getfixturevalue("response_cache"), seed=musiceval_seed,
                               prompt_variant=str(cfg["prompt_variant"]), chunks=str(cfg["live_chunks"]),
                               max_items=int(cfg.get("live_max_items", 0)), n_permutations=int(cfg["n_permutations"]))
            _live_cache[key] = run.result
        return _live_cache[key]

    return get


@pytest.mark.parametrize("name", LIVE_CASES)
@pytest.mark.musiceval_live_model
def test_live_factual_f1_beats_permutation_chance(name, live, gate, thresholds):
    result = live(name)
    _report(gate, name, result)
    if name.startswith("FMA"):
        gate.finding(f"{name}: chance of uniform guessing among 8 balanced genres",
                     estimate=float(thresholds["factual"]["fma_small_chance"]), protocol=PROTOCOL, metric="f1",
                     detail=f"permutation chance {result.metrics['chance']['f1']:.3f}")
    gate.beats_permutation_null(result.scores["correct"]["f1"], result.null_f1,
                                name=f"{name}: factual F1 beats permutation chance", protocol=PROTOCOL, metric="f1",
                                scale=METRIC_SCALES["f1"])


@pytest.mark.parametrize("name", LIVE_CASES)
@pytest.mark.musiceval_live_model
def test_live_factual_f1_correct_beats_random(name, live, gate):
    result = live(name)
    gate.paired_greater(result.scores["correct"]["f1"], result.scores["random"]["f1"],
                        name=f"{name}: factual F1 Correct > Random audio", protocol=PROTOCOL, metric="f1",
                        scale=METRIC_SCALES["f1"])


@pytest.fixture
def live_closed_run(request, model_spec, data_dir, musiceval_seed, thresholds):
    """``(name, variant) -> VariantResult`` of the live model on a closed-question variant."""
    def get(name: str, variant: str):
        from musiceval.protocols.factual.live import live_closed

        if model_spec == "recorded" or model_spec.startswith("recorded:"):
            pytest.skip(f"{NOT_APPLICABLE}the FMA / MusicNet {variant} gates need a live model: pass --musiceval-model hf:<dir> or openai-compatible:<url>")
        cfg = thresholds["factual"]
        limit = int(cfg["live_true_false_max_items"] if variant == "true-false" else cfg.get("live_max_items", 0))
        key = (variant, name, model_spec, str(data_dir), musiceval_seed, limit)
        if key not in _live_cache:
            _, items, vocab = LIVE[name]
            items = items(data_dir)
            if not any(it.audio for it in items):
                pytest.skip(f"no audio found under --musiceval-data-dir {data_dir} for {name}; see the dataset's download instructions")
            _live_cache[key] = live_closed(request.getfixturevalue("music_lm"), items, load_vocabulary(vocab), variant,
                                           data_dir=data_dir, cache=request.getfixturevalue("response_cache"),
                                           seed=musiceval_seed, max_items=limit, n_permutations=int(cfg["n_permutations"])).result
        return _live_cache[key]

    return get


@pytest.mark.parametrize("name", LIVE_CASES)
@pytest.mark.musiceval_live_model
def test_live_true_false_f1_beats_permutation_chance(name, live_closed_run, gate):
    """"Is {label} used in this song?" for every label: F1 of the labels answered yes."""
    result = live_closed_run(name, "true-false")
    gate.record_table(PROTOCOL, f"{name}: true/false table", [{k: v for k, v in result.metrics["correct"].items() if k != "labels"}])
    gate.beats_permutation_null(result.scores["f1"], result.null_f1, name=f"{name}: true/false F1 beats permutation chance",
                                protocol=PROTOCOL, metric="f1", scale=METRIC_SCALES["f1"])


@pytest.mark.parametrize("name", LIVE_CASES)
@pytest.mark.musiceval_live_model
def test_live_binary_choice_beats_a_coin_flip(name, live_closed_run, gate):
    """"Between {true label} and {distractor}" (true first in exactly half the items): the
    exact binomial test of the correct count against 1/2."""
    result = live_closed_run(name, "binary")
    gate.record_table(PROTOCOL, f"{name}: binary choice", [result.metrics["correct"]])
    gate.binomial_greater(result.scores["accuracy"], 0.5, name=f"{name}: binary-choice accuracy beats a coin flip",
                          protocol=PROTOCOL, metric="accuracy", scale=BINARY)  # per item: the true label chosen or not


# ----------------------------------------------------------------------------- extractor agreement


@pytest.mark.musiceval_self_check  # the suite's two extractors agreeing: a property of the suite, not of the model
def test_rule_extractor_agrees_with_llm_extractor(source, run, request, gate, musiceval_rootdir, musiceval_test_id):
    """Per answer file: how often the offline rule extractor returns the LLM extractor's label set."""
    from musiceval.llm.cassettes import use_cassette
    from musiceval.llm.client import make_client
    from musiceval.protocols.factual.engine import extractor_agreement, llm_extractor, rule_extractor

    cassette = musiceval_rootdir / "fixtures" / "factual" / "cassettes" / f"agreement_{source.path.stem}.yaml"
    mode = request.config.getoption("musiceval_record_mode")
    if not cassette.is_file() and mode == "none":
        gate.skip(f"needs the suite's LLM: cassette {cassette.name} is missing; record it with OPENAI_API_KEY=... "
                  f"pytest {musiceval_test_id} --musiceval-record-mode once")
    vocab, data = run.vocab, run.data  # the answers and vocabulary the factual gates scored
    with use_cassette(cassette, mode=mode, test_id=musiceval_test_id):
        llm = llm_extractor(vocab, model="gpt-4.1-mini", client=make_client(require_key=False))
        agreement = extractor_agreement(data, vocab, rule_extractor(vocab), llm)
    name = f"{source.model} {source.label}"
    gate.record_table(PROTOCOL, f"{name}: rule vs LLM extractor, Cohen's kappa per label",
                      [{"label": k, "kappa": v} for k, v in agreement["kappa_per_label"].items()])
    gate.finding(f"{name}: rule extractor agrees with the LLM extractor (exact set match)",
                 estimate=agreement["exact_set"], n=agreement["n"], protocol=PROTOCOL, metric="agreement",
                 detail=f"mean Jaccard {agreement['mean_jaccard']:.3f}, mean kappa {agreement['kappa_mean']:.3f} over "
                        f"{agreement['n_kappa_labels']} labels; {agreement['n_failed']} items the LLM could not extract")
