"""Release gates for factual QA (SPEC section 2): extracted labels against the true labels.

Embedded default (``--model recorded``): real recorded answers in ``fixtures/factual/``:

- MiDashengLM-7B on 300 NSynth test clips ("What's the music instrument?", dasheng layout);
- MU-LLaMA and LTU on CMI-Bench's NSynth instrument (first 300) and GTZAN (290) prompts.

For each, two checks on the per-item macro F1 of the rule extractor's labels:

1. Correct beats the permutation chance level (predictions permuted across items, seeded);
2. Correct beats Random (paired by item): Random is the answer the same model gave to the same
   prompt for another clip (a seeded derangement), scored against this item's labels.

They are gates for the models that answer the question (MiDashengLM on NSynth, MU-LLaMA on
GTZAN). MU-LLaMA answers "violin" or "piano" to every NSynth clip, LTU mostly declines GTZAN's
prompt (both at chance, as CMI-Bench reports) and LTU names an NSynth family for few clips (near
chance: the interval includes it), so for those three the same two differences are FINDINGs with
their intervals (documented model properties, not release conditions, and never an xfail).

Live model (``--model hf:...`` / ``openai-compatible:...``) and ``--data-dir``: the same gates on
FMA-small top-level genres (chance about 1/8) and MusicNet instruments and composers, through
:func:`musiceval.scoring.factual_live.live_factual` (generate -> cache -> extract -> score; the
``[factual]`` thresholds pick the prompt variant and the chunk rule); the tests carry the
``dataset`` marker and skip with the download instruction when the data is absent.

Closed questions with a live model (:func:`musiceval.scoring.factual_live.live_closed`): the
binary-choice variant ("Between {true label} and {distractor}") beats a coin flip (exact binomial
test), and the true/false table's F1 ("Is {label} used ...?" per label, the first
``live_true_false_max_items`` items) beats its permutation chance, on the same datasets.

Extractor agreement: when the LLM extractor's cassettes exist (``fixtures/factual/cassettes/``),
the rule and LLM extractors' agreement per task (exact-set rate, mean Jaccard, mean Cohen's kappa
per label: :func:`musiceval.scoring.factual.extractor_agreement`) is recorded as a finding.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from musiceval.extraction import load_vocabulary
from musiceval.scoring.factual import FactualResult, load_factual, score_factual

PROTOCOL = "factual"
AT_CHANCE = "at chance on this task (CMI-Bench reports the same)"
# the at-chance models' checks are FINDINGs (test docstring above); a model that starts beating
# chance shows there as a positive interval: move it back to the gates by setting its reason to None
EMBEDDED = {
    # name: (file, format, vocabulary, why the model is at chance or None)
    "MiDashengLM NSynth instrument": ("nsynth_midashenglm.jsonl", "dasheng", "nsynth", None),
    "MU-LLaMA GTZAN genre": ("mullama_GTZAN.jsonl", "cmi-bench", "gtzan", None),
    "LTU NSynth instrument": ("ltu_Nsynth_instrument.jsonl", "cmi-bench", "nsynth",
                              "LTU names a family for few clips: near chance, its interval includes chance at n=300"),
    "MU-LLaMA NSynth instrument": ("mullama_Nsynth_instrument.jsonl", "cmi-bench", "nsynth",
                                   "MU-LLaMA answers 'violin' or 'piano' for every clip: " + AT_CHANCE),
    "LTU GTZAN genre": ("ltu_GTZAN.jsonl", "cmi-bench", "gtzan", "LTU declines or lists every genre: " + AT_CHANCE),
}


@lru_cache(maxsize=None)
def _embedded(fixtures_dir: str, name: str, seed: int, n_permutations: int) -> FactualResult:
    file, fmt, vocab, _ = EMBEDDED[name]
    data = load_factual(Path(fixtures_dir) / "factual" / file, fmt)
    return score_factual(data, load_vocabulary(vocab), seed=seed, n_permutations=n_permutations)


@pytest.fixture
def embedded(request, model_spec, fixtures_dir, musiceval_seed, thresholds):
    if model_spec != "recorded":
        pytest.skip(f"--model {model_spec}: the embedded factual gates score the recorded answers in fixtures/factual; "
                    "score other recorded files with `musiceval score factual`, live models run the FMA/MusicNet gates")
    return lambda name: _embedded(str(fixtures_dir), name, musiceval_seed, int(thresholds["factual"]["n_permutations"]))


def _report(gate, name: str, result: FactualResult) -> None:
    m = result.metrics
    rows = [{"condition": c, **{k: m[c][k] for k in ("precision", "recall", "f1", "accuracy", "micro_f1", "n")}}
            for c in ("correct", "random") if c in m]
    rows.append({"condition": "chance (permutation)", "f1": m["chance"]["f1"]})
    gate.record_table(PROTOCOL, f"{name}: factual P/R/F1 (rule extractor)", rows)
    gate.record_table(PROTOCOL, f"{name}: per-label breakdown (Correct)",
                      [{"label": label, **row} for label, row in result.per_label.items() if row["support"] or row["n_pred"]])


@pytest.mark.parametrize("name", list(EMBEDDED))
def test_factual_f1_beats_permutation_chance(name, embedded, gate):
    result = embedded(name)
    _report(gate, name, result)
    f1, weak = result.scores["correct"]["f1"], EMBEDDED[name][3]
    if weak:
        chance = float(result.null_f1.mean())
        label = f"{name}: factual F1 minus permutation chance (weak model)"
        gate.interval_finding(f1, name=label, minus=chance, protocol=PROTOCOL, metric="f1",
                              detail=f"{weak}; F1 {f1.mean():.3f} vs chance {chance:.3f}")
        return
    gate.beats_permutation_null(f1, result.null_f1, name=f"{name}: factual F1 beats permutation chance",
                                protocol=PROTOCOL, metric="f1")


@pytest.mark.parametrize("name", list(EMBEDDED))
def test_factual_f1_correct_beats_random(name, embedded, gate):
    result = embedded(name)
    correct, random, weak = result.scores["correct"]["f1"], result.scores["random"]["f1"], EMBEDDED[name][3]
    if weak:
        gate.paired_finding(correct, random, name=f"{name}: factual F1 Correct - Random (weak model)", detail=weak,
                            protocol=PROTOCOL, metric="f1")
        return
    gate.paired_greater(correct, random, name=f"{name}: factual F1 Correct > Random", protocol=PROTOCOL, metric="f1")


# ----------------------------------------------------------------------------- live model + datasets


@lru_cache(maxsize=None)
def _fma_items(data_dir: str):
    from musiceval.data.fma import load_fma

    items, _ = load_fma(Path(data_dir) / "fma" / "fma_metadata", subset="small", audio_dir=Path(data_dir) / "fma" / "fma_small")
    return items


@lru_cache(maxsize=None)
def _musicnet_items(data_dir: str, task: str):
    from musiceval.data.musicnet import load_musicnet

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
        from musiceval.scoring.factual_live import live_factual

        if model_spec == "recorded" or model_spec.startswith("recorded:"):
            pytest.skip("the FMA / MusicNet factual gates need a live model: pass --model hf:<dir> or openai-compatible:<url>")
        if data_dir is None:
            pytest.skip(f"{name} needs --data-dir holding the dataset; see docs for the download instructions")
        cfg = thresholds["factual"]
        key = (name, model_spec, str(data_dir), musiceval_seed, cfg["prompt_variant"], cfg["live_chunks"])
        if key not in _live_cache:
            _, items, vocab = LIVE[name]
            items = items(data_dir)
            if not any(it.audio for it in items):
                pytest.skip(f"no audio found under --data-dir {data_dir} for {name}; see the dataset's download instructions")
            run = live_factual(request.getfixturevalue("music_lm"), items, load_vocabulary(vocab), data_dir=data_dir,
                               cache=request.getfixturevalue("response_cache"), seed=musiceval_seed,
                               prompt_variant=str(cfg["prompt_variant"]), chunks=str(cfg["live_chunks"]),
                               max_items=int(cfg.get("live_max_items", 0)), n_permutations=int(cfg["n_permutations"]))
            _live_cache[key] = run.result
        return _live_cache[key]

    return get


@pytest.mark.parametrize("name", LIVE_CASES)
def test_live_factual_f1_beats_permutation_chance(name, live, gate, thresholds):
    result = live(name)
    _report(gate, name, result)
    if name.startswith("FMA"):
        gate.finding(f"{name}: chance of uniform guessing among 8 balanced genres",
                     estimate=float(thresholds["factual"]["fma_small_chance"]), protocol=PROTOCOL, metric="f1",
                     detail=f"permutation chance {result.metrics['chance']['f1']:.3f}")
    gate.beats_permutation_null(result.scores["correct"]["f1"], result.null_f1,
                                name=f"{name}: factual F1 beats permutation chance", protocol=PROTOCOL, metric="f1")


@pytest.mark.parametrize("name", LIVE_CASES)
def test_live_factual_f1_correct_beats_random(name, live, gate):
    result = live(name)
    gate.paired_greater(result.scores["correct"]["f1"], result.scores["random"]["f1"],
                        name=f"{name}: factual F1 Correct > Random audio", protocol=PROTOCOL, metric="f1")


@pytest.fixture
def live_closed_run(request, model_spec, data_dir, musiceval_seed, thresholds):
    """``(name, variant) -> VariantResult`` of the live model on a closed-question variant."""
    def get(name: str, variant: str):
        from musiceval.scoring.factual_live import live_closed

        if model_spec == "recorded" or model_spec.startswith("recorded:"):
            pytest.skip(f"the FMA / MusicNet {variant} gates need a live model: pass --model hf:<dir> or openai-compatible:<url>")
        cfg = thresholds["factual"]
        limit = int(cfg["live_true_false_max_items"] if variant == "true-false" else cfg.get("live_max_items", 0))
        key = (variant, name, model_spec, str(data_dir), musiceval_seed, limit)
        if key not in _live_cache:
            _, items, vocab = LIVE[name]
            items = items(data_dir)
            if not any(it.audio for it in items):
                pytest.skip(f"no audio found under --data-dir {data_dir} for {name}; see the dataset's download instructions")
            _live_cache[key] = live_closed(request.getfixturevalue("music_lm"), items, load_vocabulary(vocab), variant,
                                           data_dir=data_dir, cache=request.getfixturevalue("response_cache"),
                                           seed=musiceval_seed, max_items=limit, n_permutations=int(cfg["n_permutations"])).result
        return _live_cache[key]

    return get


@pytest.mark.parametrize("name", LIVE_CASES)
def test_live_true_false_f1_beats_permutation_chance(name, live_closed_run, gate):
    """"Is {label} used in this song?" for every label: F1 of the labels answered yes."""
    result = live_closed_run(name, "true-false")
    gate.record_table(PROTOCOL, f"{name}: true/false table", [{k: v for k, v in result.metrics["correct"].items() if k != "labels"}])
    gate.beats_permutation_null(result.scores["f1"], result.null_f1, name=f"{name}: true/false F1 beats permutation chance",
                                protocol=PROTOCOL, metric="f1")


@pytest.mark.parametrize("name", LIVE_CASES)
def test_live_binary_choice_beats_a_coin_flip(name, live_closed_run, gate):
    """"Between {true label} and {distractor}" (true first in exactly half the items): the
    exact binomial test of the correct count against 1/2."""
    result = live_closed_run(name, "binary")
    gate.record_table(PROTOCOL, f"{name}: binary choice", [result.metrics["correct"]])
    gate.binomial_greater(result.scores["accuracy"], 0.5, name=f"{name}: binary-choice accuracy beats a coin flip",
                          protocol=PROTOCOL, metric="accuracy")


# ----------------------------------------------------------------------------- extractor agreement

AGREEMENT = {name: f"fixtures/factual/cassettes/agreement_{EMBEDDED[name][0].split('.')[0]}.yaml"
             for name in ("MiDashengLM NSynth instrument", "MU-LLaMA GTZAN genre", "LTU NSynth instrument", "LTU GTZAN genre")}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.llm(cassette=c)) for n, c in AGREEMENT.items()])
def test_rule_extractor_agrees_with_llm_extractor(name, request, fixtures_dir, gate):
    """Per task: how often the offline rule extractor returns the LLM extractor's label set."""
    from musiceval.llm.cassettes import use_cassette
    from musiceval.llm.client import make_client
    from musiceval.scoring.factual import extractor_agreement, llm_extractor, rule_extractor

    file, fmt, vocab_name, _ = EMBEDDED[name]
    vocab = load_vocabulary(vocab_name)
    data = load_factual(Path(fixtures_dir) / "factual" / file, fmt)
    with use_cassette(Path(request.config.rootpath) / AGREEMENT[name], test_id=request.node.nodeid):
        llm = llm_extractor(vocab, model="gpt-4.1-mini", client=make_client(require_key=False))
        agreement = extractor_agreement(data, vocab, rule_extractor(vocab), llm)
    gate.record_table(PROTOCOL, f"{name}: rule vs LLM extractor, Cohen's kappa per label",
                      [{"label": k, "kappa": v} for k, v in agreement["kappa_per_label"].items()])
    gate.finding(f"{name}: rule extractor agrees with the LLM extractor (exact set match)",
                 estimate=agreement["exact_set"], n=agreement["n"], protocol=PROTOCOL, metric="agreement",
                 detail=f"mean Jaccard {agreement['mean_jaccard']:.3f}, mean kappa {agreement['kappa_mean']:.3f} over "
                        f"{agreement['n_kappa_labels']} labels; {agreement['n_failed']} items the LLM could not extract")
