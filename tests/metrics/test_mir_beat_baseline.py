"""The metronome baseline of the beat tasks: computed once per reference set, values unchanged.

Checked against ``mir_eval`` called directly on the same evenly spaced beats, for real CMI-Bench
references (the embedded MU-LLaMA and LTU slices, both modes), and through the memo paths
(in-process, a dict, the on-disk :class:`~musiceval.protocols.mir.engine.BaselineStore`).
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

mir_eval = pytest.importorskip("mir_eval")

from musiceval.data.cmibench import load_outputs  # noqa: E402
from musiceval.protocols.mir.metrics import beats as mir_beats  # noqa: E402
from musiceval.protocols.mir.metrics.tasks import score_task  # noqa: E402
from musiceval.protocols.mir.metrics.beats import evenly_spaced_beats, metronome_baseline  # noqa: E402
from musiceval.protocols.mir.engine import BaselineStore, score_file  # noqa: E402

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "mir" / "outputs"
N = 40  # records per file: real variety, cheap on 2 cores


def _direct(ref: np.ndarray, tempo: float) -> tuple[float, float, float]:
    """The baseline of one item as the code before the memo computed it: mir_eval, no shortcut."""
    metronome = evenly_spaced_beats(float(ref[-1]), tempo) if ref.size else np.zeros(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = float(mir_eval.beat.f_measure(ref, metronome))
        _, cmlt, _, amlt = mir_eval.beat.continuity(ref, metronome)
    return f, float(cmlt), float(amlt)


def _records(model: str, task: str):
    return load_outputs(FIX / model / f"{model}_{task}.jsonl").records[:N]


@pytest.fixture(autouse=True)
def _fresh_memo():
    mir_beats._RECENT.clear()
    yield
    mir_beats._RECENT.clear()


@pytest.mark.parametrize("compat", [None, "cmi-bench"])
@pytest.mark.parametrize("model,task", [("mullama", "ballroom_beat"), ("ltu", "gtzan_downbeat")])
def test_baseline_equals_mir_eval_called_directly(model, task, compat):
    from musiceval.protocols.mir.metrics import families as fam

    records = _records(model, task)
    _, keep, _, base, tempo = fam.beat_table(records, compat)
    from musiceval.parsers.times import parse_times, parse_times_cmi

    parse = parse_times_cmi if compat else parse_times
    refs = [parse(r.correct_answer) for r, k in zip(records, keep) if k]
    expected = [_direct(np.asarray(ref, dtype=float), tempo) for ref in refs]
    assert len(expected) == len(base["f_measure"]) > 0
    assert list(zip(base["f_measure"], base["cmlt"], base["amlt"])) == expected  # exact, not approx
    res = score_task(task, records, compat=compat)
    assert res.baseline["f_measure"].values.tolist() == [e[0] for e in expected]
    assert res.baseline_metrics["cmlt"] == float(np.mean([e[1] for e in expected]))


def test_second_model_over_the_same_references_runs_no_mir_eval_for_the_baseline(monkeypatch):
    records = _records("mullama", "gtzan_beat")
    first = score_task("gtzan_beat", records)
    calls = []
    real = mir_beats.evenly_spaced_beats  # only the baseline builds metronomes
    monkeypatch.setattr(mir_beats, "evenly_spaced_beats", lambda *a, **k: calls.append(1) or real(*a, **k))
    other = [type(r)(r.item_id, r.index, r.question, "0.5s, 1.0s, 1.5s", r.correct_answer, r.audioid, r.group, r.other)
             for r in records]  # another "model": same references, different answers
    second = score_task("gtzan_beat", other)
    assert calls == []  # no metronome built, so no mir_eval run for the baseline
    assert second.baseline_metrics == first.baseline_metrics
    for m in ("f_measure", "cmlt", "amlt"):
        assert second.baseline[m].values.tolist() == first.baseline[m].values.tolist()


def test_store_round_trips_exact_floats_and_recomputes_a_bad_file(tmp_path, monkeypatch):
    refs = [np.array([0.51, 1.02, 1.49, 2.013, 2.5]), np.array([0.3, 0.9, 1.5]), np.zeros(0)]
    store = BaselineStore(tmp_path)
    computed = metronome_baseline(refs, 118.3, memo=store)
    files = list((tmp_path / BaselineStore.DIRNAME).glob("*.json"))
    assert len(files) == 1
    mir_beats._RECENT.clear()
    monkeypatch.setattr(mir_beats, "beat_scores", lambda *a: pytest.fail("the stored table should be used"))
    assert metronome_baseline(refs, 118.3, memo=store) == computed
    monkeypatch.undo()
    files[0].write_text(json.dumps({"f_measure": [0.5], "cmlt": [0.5], "amlt": [0.5]}))  # wrong length
    mir_beats._RECENT.clear()
    assert metronome_baseline(refs, 118.3, memo=store) == computed
    assert metronome_baseline(refs, 118.30000000000001, memo=store) is not None  # another tempo: its own key
    assert len(list((tmp_path / BaselineStore.DIRNAME).glob("*.json"))) == 2


def test_score_file_with_a_cache_dir_reuses_the_baseline_across_processes_state(tmp_path, monkeypatch):
    target = tmp_path / "mullama_ballroom_downbeat.jsonl"
    target.write_text(json.dumps(json.loads((FIX / "mullama" / "mullama_ballroom_downbeat.jsonl").read_text())[:N]))
    cold, _ = score_file(target, compat="cmi-bench", cache_dir=tmp_path / "cache")
    mir_beats._RECENT.clear()  # as in a new process: only the on-disk store remains
    real = mir_beats.evenly_spaced_beats
    calls = []
    monkeypatch.setattr(mir_beats, "evenly_spaced_beats", lambda *a, **k: calls.append(1) or real(*a, **k))
    warm, _ = score_file(target, compat="cmi-bench", cache_dir=tmp_path / "cache")
    assert calls == []
    assert warm.metrics == cold.metrics and warm.baseline_metrics == cold.baseline_metrics
    assert warm.baseline["amlt"].values.tolist() == cold.baseline["amlt"].values.tolist()


def test_an_unwritable_store_only_means_the_table_is_not_kept(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    store = BaselineStore(blocker)  # <file>/mir-baselines cannot be created
    refs = [np.array([0.5, 1.0, 1.5])]
    first = metronome_baseline(refs, 120.0, memo=store)
    mir_beats._RECENT.clear()
    assert metronome_baseline(refs, 120.0, memo=store) == first and store.get("anything") is None
