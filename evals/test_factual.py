"""Release gates for factual QA (SPEC section 2): extracted labels against the true labels.

Embedded default (``--model recorded``): real recorded answers in ``fixtures/factual/``:

- MiDashengLM-7B on 300 NSynth test clips ("What's the music instrument?", dasheng layout);
- MU-LLaMA and LTU on CMI-Bench's NSynth instrument (first 300) and GTZAN (290) prompts.

For each, two gates on the per-item macro F1 of the rule extractor's labels:

1. Correct beats the permutation chance level (predictions permuted across items, seeded);
2. Correct beats Random (paired by item): Random is the answer the same model gave to the same
   prompt for another clip (a seeded derangement), scored against this item's labels.

MU-LLaMA answers "violin" or "piano" to every NSynth clip and LTU mostly declines GTZAN's prompt:
both are at chance, as CMI-Bench reports, so their gates are expected failures (``xfail``, not
strict: a model that starts beating chance shows as XPASS, not as a silent pass).

Live model (``--model hf:...`` / ``openai-compatible:...``) and ``--data-dir``: the same gates on
FMA-small top-level genres (chance about 1/8) and MusicNet instruments and composers; the tests
carry the ``dataset`` marker and skip with the download instruction when the data is absent.

Extractor agreement: when the LLM extractor's cassettes exist (``fixtures/factual/cassettes/``),
the rule and LLM extractors' agreement is recorded per task as a finding.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import pytest

from musiceval.extraction import load_vocabulary
from musiceval.metrics.sets import set_scores
from musiceval.scoring.factual import FactualResult, FactualSet, load_factual, score_factual

PROTOCOL = "factual"
AT_CHANCE = "at chance on this task (CMI-Bench reports the same); the gate documents it"
EMBEDDED = {
    # name: (file, format, vocabulary, expected failure reason or None)
    "MiDashengLM NSynth instrument": ("nsynth_midashenglm.jsonl", "dasheng", "nsynth", None),
    "MU-LLaMA GTZAN genre": ("mullama_GTZAN.jsonl", "cmi-bench", "gtzan", None),
    "LTU NSynth instrument": ("ltu_Nsynth_instrument.jsonl", "cmi-bench", "nsynth", None),
    "MU-LLaMA NSynth instrument": ("mullama_Nsynth_instrument.jsonl", "cmi-bench", "nsynth",
                                   "MU-LLaMA answers 'violin' or 'piano' for every clip: " + AT_CHANCE),
    "LTU GTZAN genre": ("ltu_GTZAN.jsonl", "cmi-bench", "gtzan", "LTU declines or lists every genre: " + AT_CHANCE),
}
CASES = [pytest.param(name, marks=pytest.mark.xfail(reason=why, strict=False) if why else ())
         for name, (_, _, _, why) in EMBEDDED.items()]


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


@pytest.mark.parametrize("name", CASES)
def test_factual_f1_beats_permutation_chance(name, embedded, gate):
    result = embedded(name)
    _report(gate, name, result)
    gate.beats_permutation_null(result.scores["correct"]["f1"], result.null_f1,
                                name=f"{name}: factual F1 beats permutation chance", protocol=PROTOCOL, metric="f1")


@pytest.mark.parametrize("name", CASES)
def test_factual_f1_correct_beats_random(name, embedded, gate):
    result = embedded(name)
    gate.paired_greater(result.scores["correct"]["f1"], result.scores["random"]["f1"],
                        name=f"{name}: factual F1 Correct > Random", protocol=PROTOCOL, metric="f1")


# ----------------------------------------------------------------------------- live model + datasets


def _live_result(model_spec, data_dir, cache_dir, seed, cfg, items, vocab_name) -> FactualResult:
    """Ask the live model each item's question under Correct and Random audio; score the answers."""
    from musiceval.generate import generate_responses
    from musiceval.models import load_model
    from musiceval.models.base import GenerationSettings
    from musiceval.models.cache import ResponseCache

    if model_spec == "recorded" or model_spec.startswith("recorded:"):
        pytest.skip("the FMA / MusicNet factual gates need a live model: pass --model hf:<dir> or openai-compatible:<url>")
    items = [it for it in items if it.audio]
    if len(items) < 2:
        pytest.skip(f"no audio found under --data-dir {data_dir} for these items; see the dataset's download instructions")
    limit = int(cfg.get("live_max_items", 0))
    items = items[:limit] if limit else items
    model = load_model(model_spec)
    try:
        result = generate_responses(model, items, conditions=("correct", "random"), data_dir=data_dir,
                                    cache=ResponseCache(Path(cache_dir) / "responses"), settings=GenerationSettings(seed=seed))
    finally:
        model.close()
    texts: dict[tuple[str, str], list[str]] = {}
    for r in result.responses:  # chunked models: join chunk answers ("any chunk" aggregation)
        texts.setdefault((r.item_id, r.condition), []).append(r.text)
    asked = [it for it in items if (it.id, "correct") in texts]
    data = FactualSet(ids=[it.id for it in asked], prompts=[it.question for it in asked],
                      texts=["\n.\n".join(texts[(it.id, "correct")]) for it in asked], truths=[it.labels for it in asked],
                      groups=[it.group or it.id for it in asked], failures=list(result.failures),
                      random_texts={it.id: "\n.\n".join(texts[(it.id, "random")]) for it in asked if (it.id, "random") in texts})
    return score_factual(data, load_vocabulary(vocab_name), seed=seed, n_permutations=int(cfg["n_permutations"]))


def _rel(items, data_dir):
    from dataclasses import replace

    return [replace(it, audio=os.path.relpath(it.audio, data_dir)) if it.audio else it for it in items]


@lru_cache(maxsize=None)
def _fma_items(data_dir: str):
    from musiceval.data.fma import load_fma

    items, _ = load_fma(Path(data_dir) / "fma" / "fma_metadata", subset="small", audio_dir=Path(data_dir) / "fma" / "fma_small")
    return _rel(items, data_dir)


@lru_cache(maxsize=None)
def _musicnet_items(data_dir: str, task: str):
    from musiceval.data.musicnet import load_musicnet

    root = Path(data_dir) / "musicnet"
    items, _ = load_musicnet(root / "musicnet_metadata.csv", task=task, labels_dir=root, audio_dir=root)
    return _rel(items, data_dir)


LIVE = {
    "FMA-small genre": ("fma", lambda d: _fma_items(str(d)), "fma-top"),
    "MusicNet instruments": ("musicnet", lambda d: _musicnet_items(str(d), "instruments"), "musicnet-instruments"),
    "MusicNet composers": ("musicnet", lambda d: _musicnet_items(str(d), "composers"), "musicnet-composers"),
}
LIVE_CASES = [pytest.param(name, marks=pytest.mark.dataset(dataset)) for name, (dataset, _, _) in LIVE.items()]
_live_cache: dict = {}


@pytest.fixture
def live(model_spec, data_dir, musiceval_cache_dir, musiceval_seed, thresholds):
    def get(name: str) -> FactualResult:
        key = (name, model_spec, str(data_dir), musiceval_seed)
        if key not in _live_cache:
            _, items, vocab = LIVE[name]
            _live_cache[key] = _live_result(model_spec, data_dir, musiceval_cache_dir, musiceval_seed,
                                            thresholds["factual"], items(data_dir), vocab)
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


# ----------------------------------------------------------------------------- extractor agreement

AGREEMENT = {name: f"fixtures/factual/cassettes/agreement_{EMBEDDED[name][0].split('.')[0]}.yaml"
             for name in ("MiDashengLM NSynth instrument", "MU-LLaMA GTZAN genre", "LTU NSynth instrument", "LTU GTZAN genre")}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.llm(cassette=c)) for n, c in AGREEMENT.items()])
def test_rule_extractor_agrees_with_llm_extractor(name, request, fixtures_dir, gate):
    """Per task: how often the offline rule extractor returns the LLM extractor's label set."""
    from musiceval.llm.cassettes import use_cassette
    from musiceval.llm.client import make_client
    from musiceval.llm.extract import LLMExtractor

    file, fmt, vocab_name, _ = EMBEDDED[name]
    vocab = load_vocabulary(vocab_name)
    data = load_factual(Path(fixtures_dir) / "factual" / file, fmt)
    rules = score_factual(data, vocab, conditions=("correct",)).predictions["correct"]
    cassette = Path(request.config.rootpath) / AGREEMENT[name]
    with use_cassette(cassette, test_id=request.node.nodeid):
        extractor = LLMExtractor(client=make_client(require_key=False), vocab=vocab)
        llm = extractor.extract_many(data.texts)
    ids = [i for i, r in zip(data.ids, llm) if r.failure is None and i in rules]
    by_id = dict(zip(data.ids, llm))
    agreement = set_scores([by_id[i].labels for i in ids], [rules[i] for i in ids])
    gate.finding(f"{name}: rule extractor agrees with the LLM extractor (exact set match)",
                 estimate=agreement["macro"]["accuracy"], protocol=PROTOCOL, metric="agreement",
                 detail=f"n={len(ids)}, F1 of rules vs LLM {agreement['macro']['f1']:.3f}, "
                        f"{sum(len(r.oov) for r in llm)} out-of-vocabulary terms dropped")
