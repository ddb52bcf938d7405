"""Release gates for CMI-Bench MIR tasks answered by a live Music LM (docs/protocols/mir.md), on the live path
of docs/evaluate-your-model.md.

Data: ``musiceval/evals/audio/cmi_bench/CMI_<task>.jsonl`` (``scripts/make_mir_live_fixtures.py``):
38 CMI-Bench instructions, in the test prompts' wording, over synthesised clips whose ground
truth is exact (the 15 of ``musiceval/evals/audio`` and 23 more in ``musiceval/evals/audio/cmi_bench/audio``):
``GS_key`` (10 key clips), ``Nsynth_pitch`` (10 pitch clips), ``gtzan_beat`` (9 tempo clips,
reference beat times) and ``Nsynth_instrument`` (9 instrument clips). Path (:func:`musiceval.protocols.mir.live.run_live_task`): instructions -> ``generate_responses``
(response cache) -> the answer set a recorded CMI-Bench output file gives -> ``MirProtocol.from_answers``
(the parsers, metrics and trivial baselines of the recorded path, through the same protocol).

Model:

- embedded default (no live model declared): a tiny randomly initialised Qwen2-Audio built in a
  temporary directory and loaded through the real ``hf:`` adapter on CPU, answering with at most
  8 tokens. Its answers are noise, so each task's comparison with its trivial baseline is a
  FINDING; the gate is the machinery: every instruction ends as a scored record or a counted
  failure with its reason;
- a live model (``--musiceval-model hf:<dir>``, ``openai-compatible:<url>#<model>``, ...): the same run
  with ``[mir] live_max_tokens`` and the shared response cache, and each task beating its trivial
  baseline (majority class, majority key, a metronome at the median tempo) is a paired gate.

A downloaded CMI-Bench (``--musiceval-data-dir DIR`` with the nicolaus625/CMI-bench repository cloned as
``DIR/cmi-bench`` and its audio downloaded under ``DIR/cmi-bench/data/...``, where its
instruction files point) runs the same path on the first ``[mir] live_dataset_items``
instructions of each of ``[mir] live_dataset_tasks``: the machinery gate, a table and a FINDING
per task (``dataset("cmi-bench")`` marker: skipped with what to download when absent).

Run a real model: ``pytest evals/ --musiceval-model hf:Qwen/Qwen2-Audio-7B-Instruct`` (every gate; ``-k cmi_bench or trivial_baseline`` for these).
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from musiceval.audio import SYNTHESISED_AUDIO as AUDIO

from musiceval.generate import GenerationResult, require_answers
from musiceval.models.base import GenerationSettings
from musiceval.models.cache import ResponseCache
from musiceval.records import ItemScores
from musiceval.protocols.checks import census_at_least
from musiceval.protocols.mir.live import LiveTask, find_instruction_file, run_live_task
from musiceval.protocols.mir.protocol import SCALES
from musiceval.stats.scales import BINARY
from musiceval.redact import redact

#: the tests and fixtures this module contributes (``musiceval.evals.release_gates`` gathers them)
__all__ = [
    "mir_live",
    "test_every_cmi_bench_instruction_is_scored_or_a_counted_failure",
    "test_live_model_beats_the_trivial_baseline_on_synthesised_instructions",
    "test_live_model_on_a_downloaded_cmi_bench",
]
PROTOCOL = "mir"
#: the tasks of musiceval/evals/audio/cmi_bench
SYNTH_TASKS = ("GS_key", "Nsynth_pitch", "gtzan_beat", "Nsynth_instrument")
LOWER_IS_BETTER = {"wer", "cer", "deviation_ref_to_est", "deviation_est_to_ref"}
pytestmark = pytest.mark.xdist_group("music_lm")  # with musiceval/protocols/synth/gates.py: one model per worker


def _run(request, model_and_real, root: Path, data_dir: Path, tasks, *, limit, thresholds, seed, tmp_path_factory) -> dict[str, LiveTask]:
    model, real = model_and_real
    settings = GenerationSettings(temperature=0.0, max_tokens=int(thresholds["mir"]["live_max_tokens"]) if real else 8, seed=seed)
    # a real model shares the suite's response cache (reruns are free); the tiny one runs every time
    cache = request.getfixturevalue("response_cache") if real else ResponseCache(tmp_path_factory.mktemp("mir-live-responses"))
    runs = {task: run_live_task(model, task, find_instruction_file(root, task), data_dir=data_dir, cache=cache,
                                settings=settings, limit=limit) for task in tasks}
    if not any(live.records for live in runs.values()):  # one line about the model, not a failure per task
        asked = sum(len(live.items) for live in runs.values())
        require_answers(GenerationResult(failures=[f for live in runs.values() for f in live.failures]),
                        redact(model.spec), f"{len(runs)} CMI-Bench task files ({asked} instructions)")
    return runs


@pytest.fixture(scope="module")
def mir_live(request, live_music_lm, thresholds, musiceval_seed, tmp_path_factory):
    audio = AUDIO
    runs = _run(request, live_music_lm, audio / "cmi_bench", audio, SYNTH_TASKS, limit=None, thresholds=thresholds,
                seed=musiceval_seed, tmp_path_factory=tmp_path_factory)
    return runs, live_music_lm[1], redact(live_music_lm[0].spec)


def _accounted(runs: dict[str, LiveTask]) -> ItemScores:
    """1 per instruction that was scored or is a counted failure with a reason; 0 if it vanished."""
    values, failures = {}, []
    for task, live in runs.items():
        scored = set()
        if live.result is not None:
            for scores in live.result.per_item.values():
                scored |= set(scores.ids)
        failed = {f.item_id for f in live.failures if f.reason.strip()}
        for item in live.items:
            values[f"{task}/{item.id}"] = float(item.id in scored or item.id in failed)
        for f in live.failures:
            values.setdefault(f"{task}/{f.item_id}", float(bool(f.reason.strip())))
        failures.extend(live.failures)
    return ItemScores.from_mapping("scored_or_counted", values, failures=failures)


def _table(runs: dict[str, LiveTask], spec: str) -> list[dict]:
    rows = []
    for task, live in runs.items():
        res = live.result
        metric = next(iter(res.baseline), None) if res is not None else None
        rows.append({
            "model": spec, "task": task, "n": len(live.items), "answered": len(live.records),
            "unparsed": len(res.failures) if res else None, "failed": len(live.failures), "metric": metric,
            "model score": round(res.metrics[metric], 4) if metric else None,
            "trivial baseline": round(float(res.baseline_metrics[metric]), 4) if metric else None,
            "error": live.error or "",
        })
    return rows


def _compare(gate, live: LiveTask, spec: str, where: str, *, release_gate: bool) -> None:
    """Model vs trivial baseline on the task's per-item scores: a paired gate or a FINDING."""
    task = live.task
    if live.result is None or not live.result.baseline:
        detail = live.error or "the task has no trivial baseline"
        if release_gate:
            pytest.fail(f"{spec} {task} ({where}): not scored: {detail}")
        gate.finding(f"live {task} ({where}): not scored", estimate=math.nan, detail=detail, protocol=PROTOCOL)
        return
    res = live.result
    metric = next(iter(res.baseline))
    a, b = res.per_item[metric], res.baseline[metric]
    if metric in LOWER_IS_BETTER:
        a, b = b, a
    name = f"live {task} ({where}) {metric} > trivial baseline"
    scale = SCALES.get(metric)
    if release_gate:
        gate.paired_greater(a, b, name=name, protocol=PROTOCOL, metric=metric, scale=scale)
        return
    gate.paired_finding(a, b, name=name, protocol=PROTOCOL, metric=metric, scale=scale,
                        detail=f"model {spec}: {res.metrics[metric]:.4f} vs baseline {res.baseline_metrics[metric]:.4f}; "
                               f"{len(res.failures)} unparsed, {len(live.failures)} failed")


def test_every_cmi_bench_instruction_is_scored_or_a_counted_failure(mir_live, gate):
    runs, _, spec = mir_live
    gate.record_table(PROTOCOL, f"CMI-Bench instructions over musiceval/evals/audio, live ({spec})", _table(runs, spec))
    lines = sum(1 for live in runs.values() for line in Path(live.source).read_text(encoding="utf-8").splitlines() if line.strip())
    accounted = _accounted(runs)
    assert accounted.n == lines, f"{accounted.n} outcomes for {lines} instruction lines"
    census_at_least(gate, accounted, 1.0, check="mir/live_accounted", protocol=PROTOCOL,
                    name="live mir: every instruction scored or a counted failure", scale=BINARY)


@pytest.mark.parametrize("task", SYNTH_TASKS)
def test_live_model_beats_the_trivial_baseline_on_synthesised_instructions(mir_live, gate, task):
    """A real model: paired gate. The tiny random embedded model: a FINDING (its answers are noise)."""
    runs, real, spec = mir_live
    _compare(gate, runs[task], spec, "synthesised", release_gate=real)


@pytest.mark.dataset("cmi-bench")
def test_live_model_on_a_downloaded_cmi_bench(request, live_music_lm, data_dir, thresholds, musiceval_seed,
                                              tmp_path_factory, gate):
    cfg = thresholds["mir"]
    root = Path(data_dir) / "cmi-bench"
    try:
        runs = _run(request, live_music_lm, root, root, cfg["live_dataset_tasks"], limit=int(cfg["live_dataset_items"]),
                    thresholds=thresholds, seed=musiceval_seed, tmp_path_factory=tmp_path_factory)
    except FileNotFoundError as exc:
        gate.skip(str(exc))
    spec = redact(live_music_lm[0].spec)
    gate.record_table(PROTOCOL, f"CMI-Bench (downloaded, first {cfg['live_dataset_items']} per task), live ({spec})",
                      _table(runs, spec))
    for live in runs.values():  # findings: a few items per task are a sanity check, not a release gate
        _compare(gate, live, spec, "dataset", release_gate=False)
    census_at_least(gate, _accounted(runs), 1.0, check="mir/live_dataset_accounted",
                    name="live mir (dataset): every instruction scored or a counted failure",
                    protocol=PROTOCOL, scale=BINARY)
