"""`musiceval compare` / `results.compare()` on real CMI-Bench outputs, provenance refusal, power.

Runs are written through the real path: gate sink rows in ``parts/`` merged by
:func:`musiceval.report.write_run` into ``results.json`` + ``scores.jsonl``.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from musiceval import results
from musiceval.cli import main
from musiceval.results.comparison import NotComparable, leaderboard
from musiceval.gates import Gate, GateConfig
from musiceval.provenance import fingerprint
from musiceval.records import ItemScores, Outcome

# ../shared/data beside the repo (or beside a worktree's parent): the first one found going up
SHARED = next((p / "shared" / "data" for p in Path(__file__).resolve().parents if (p / "shared" / "data").is_dir()),
              Path(__file__).resolve().parents[2] / "shared" / "data")
OUTPUTS = SHARED / "cmi-bench" / "outputs"
TASKS = ("GTZAN", "VocalSet_tech", "GS_key", "DSing")


def write_results(path: Path, scores: dict[str, list[ItemScores]], meta: dict) -> Path:
    """A results dir as a pytest run writes it: sink rows in parts/, merged by write_run."""
    from musiceval.report import write_run

    parts = path / "parts"
    parts.mkdir(parents=True)
    rows: list[dict] = []
    for key, item_scores in scores.items():  # "mir/GTZAN": protocol mir, answer source GTZAN, of the run's model
        protocol, _, source = key.partition("/")
        tag = {"model": meta.get("model"), "source": source}
        gate = Gate(GateConfig(), sink=lambda row, tag=tag: rows.append({**row, **tag}))
        gate.record_scores(*item_scores, gate=f"{key} scores", protocol=protocol)
    (parts / "gw0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    write_run(path, meta)
    return path


def _fp(model: str, **scorer_overrides):
    fp = fingerprint(protocols=["mir"], model=model, revision="main", decoding={"temperature": 0.0}, seed=0,
                     backend="recorded")
    for key, value in scorer_overrides.items():
        fp["scorer"]["protocols"]["mir"]["versions"][key] = value
    return fp


@pytest.fixture(scope="module")
def cmi_runs(tmp_path_factory):
    if not OUTPUTS.is_dir():
        pytest.skip(f"CMI-Bench outputs not found at {OUTPUTS} (shared/data beside the repo; see shared/data/README.md)")
    from musiceval.data.cmibench import load_outputs
    from musiceval.protocols.mir.metrics.tasks import score_task

    dirs, per_task = {}, {}
    for model in ("ltu", "mullama"):
        scores = {}
        for task in TASKS:
            result = score_task(task, load_outputs(OUTPUTS / model / f"{model}_{task}.jsonl").records)
            scores[f"mir/{task}"] = list(result.per_item.values())
            per_task[(model, task)] = result.metrics
        label = {"ltu": "LTU", "mullama": "MU-LLaMA"}[model]
        dirs[model] = write_results(tmp_path_factory.mktemp(model), scores,
                                    {"model": label, "seed": 0, "provenance": _fp(label)})
    return dirs, per_task


def test_cmi_bench_verdicts_agree_with_each_models_task_scores(cmi_runs):
    dirs, per_task = cmi_runs
    table = results.compare(dirs["ltu"], dirs["mullama"], margins={"accuracy": 0.02, "weighted_score": 0.02, "wer": 0.05})
    assert set(table.protocol) == {f"mir/{t}" for t in TASKS}
    for _, row in table.iterrows():
        task = row.protocol.split("/")[1]
        old, new = per_task[("ltu", task)][row.metric], per_task[("mullama", task)][row.metric]
        # the table's means are the tasks' published aggregates (per-item means of all scored items)
        assert row.mean_baseline == pytest.approx(old, abs=1e-9) and row.mean_new == pytest.approx(new, abs=1e-9)
        gain = (new - old) if row.higher_is_better else (old - new)
        assert row["diff"] == pytest.approx(gain, abs=1e-9)
        assert row.ci_low <= row["diff"] <= row.ci_high
        if row.verdict == "superior":
            assert row.ci_low > 0 and gain > 0
        if row.verdict == "inferior":
            assert row.ci_high < -row.margin and gain < -row.margin
        if row.verdict == "non-inferior":
            assert row.ci_low > -row.margin
    by = table.set_index(["protocol", "metric"]).verdict
    # MU-LLaMA answers far more GTZAN / VocalSet questions correctly, and has a lower DSing WER
    assert by[("mir/GTZAN", "accuracy")] == "superior"
    assert by[("mir/VocalSet_tech", "accuracy")] == "superior"
    assert by[("mir/DSing", "wer")] == "superior" and not table.set_index("metric").higher_is_better["wer"]
    # reversed roles: the old release (LTU) as the new one regresses on GTZAN
    back = results.compare(dirs["mullama"], dirs["ltu"], margins={"accuracy": 0.02})
    assert back.set_index(["protocol", "metric"]).verdict[("mir/GTZAN", "accuracy")] == "inferior"
    assert "Holm" in " ".join(table.attrs["notes"])
    from musiceval.results.comparison import format_markdown

    md = format_markdown(table, table.attrs["notes"])
    assert "| mir/DSing | wer (lower is better) | correct | MU-LLaMA vs LTU |" in md and md.count("\n| mir/") == len(table)


def test_cli_compare_prints_named_models_and_exits_on_regression(cmi_runs, capsys):
    dirs, _ = cmi_runs
    assert main(["compare", str(dirs["ltu"]), str(dirs["mullama"]), "--margin", "0.02"]) == 0
    out = capsys.readouterr().out
    assert "MU-LLaMA vs LTU: SUPERIOR" in out and "on mir/GTZAN accuracy" in out
    code = main(["compare", str(dirs["mullama"]), str(dirs["ltu"]), "--json", "--fail-on-regression"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 1 and any(r["verdict"] == "inferior" for r in payload["rows"])


def _toy_run(tmp_path: Path, name: str, values, *, model: str, fp, ids=None) -> Path:
    ids = ids or [f"q{k}" for k in range(len(values))]
    s = ItemScores("accuracy", ids=ids, values=values, groups=[f"t{k // 2}" for k in range(len(ids))])
    return write_results(tmp_path / name, {"choice": [s]}, {"model": model, "seed": 0, "provenance": fp})


def test_runs_differing_only_in_parser_version_refuse_to_compare(tmp_path, capsys):
    rng = np.random.default_rng(0)
    values = (rng.random(200) < 0.7).astype(float)
    a = _toy_run(tmp_path, "a", values, model="m", fp=_fp("m", mir_parsers="mir-parsers-1"))
    b = _toy_run(tmp_path, "b", values, model="m", fp=_fp("m", mir_parsers="mir-parsers-2"))
    with pytest.raises(NotComparable) as err:
        results.compare(a, b)
    assert err.value.differences == ["scorer.protocols.mir.versions.mir_parsers: mir-parsers-1 (A) != mir-parsers-2 (B)"]
    assert main(["compare", str(a), str(b)]) == 2
    assert "mir_parsers: mir-parsers-1 (A) != mir-parsers-2 (B)" in capsys.readouterr().err


def test_runs_differing_only_in_the_model_compare_and_unmatched_items_are_named(tmp_path):
    rng = np.random.default_rng(1)
    old = (rng.random(300) < 0.6).astype(float)
    new = np.where(rng.random(300) < 0.2, 1.0, old)
    a = _toy_run(tmp_path, "a", old, model="qwen", fp=_fp("hf:qwen"))
    b = _toy_run(tmp_path, "b", new[:298].tolist() + [1.0, 1.0], model="qwen2", fp=_fp("hf:qwen2"),
                 ids=[f"q{k}" for k in range(298)] + ["extra1", "extra2"])
    table = results.compare(a, b)
    row = table.iloc[0]
    assert row.baseline == "qwen" and row.new == "qwen2" and row.n_paired == 298 and row.n_unmatched == 4
    assert "2 only in qwen2: extra1, extra2" in row.detail and "2 only in qwen: q298, q299" in row.detail
    assert row.detail.startswith(f"qwen2 {new[:298].mean():.3f} vs qwen {old[:298].mean():.3f} on choice accuracy")


def test_three_runs_give_a_leaderboard_with_pairwise_verdicts(tmp_path, capsys):
    rng = np.random.default_rng(2)
    base = rng.random(400)
    runs = [_toy_run(tmp_path, f"r{k}", ((base + shift) > 0.5).astype(float), model=f"m{k}", fp=_fp(f"m{k}"))
            for k, shift in enumerate((0.0, 0.15, -0.15))]
    table = results.compare(*runs)
    assert len(table) == 3 and set(zip(table.baseline, table.new)) == {("m0", "m1"), ("m0", "m2"), ("m1", "m2")}
    board = leaderboard(table).set_index("run")
    assert board["rank"].to_dict() == {"m1": 1, "m0": 2, "m2": 3}
    assert board.loc["m1", "wins"] == 2 and board.loc["m2", "losses"] == 2
    assert main(["compare", *map(str, runs)]) == 0
    assert "leaderboard" in capsys.readouterr().out


def test_power_command_answers_items_needed(tmp_path, capsys):
    rng = np.random.default_rng(3)
    old = (rng.random(200) < 0.6).astype(float)
    new = np.where(rng.random(200) < 0.1, 1 - old, old)
    a = _toy_run(tmp_path, "a", old, model="qwen", fp=_fp("qwen"))
    b = _toy_run(tmp_path, "b", new, model="qwen2", fp=_fp("qwen2"))
    assert main(["power", str(b), "--against", str(a), "--metric", "accuracy", "--drop", "0.02", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    from musiceval import stats

    diff = new - old
    groups = [f"t{k // 2}" for k in range(200)]
    assert out["items_needed"] == stats.required_items(diff, 0.02, groups)
    assert out["mde_at_pilot_size"] == pytest.approx(stats.minimum_detectable_effect(diff, clusters=groups))
    assert main(["power", str(a), "--metric", "accuracy", "--drop", "0.05"]) == 0
    text = capsys.readouterr().out
    assert "to detect a drop of 5.0 points" in text and "assumed correlation 0.5" in text
    assert main(["power", str(a), "--metric", "bleu", "--drop", "0.05"]) == 2
    assert "the run has: choice/accuracy" in capsys.readouterr().err


def test_rows_of_other_models_in_one_results_dir_are_not_mixed_in(tmp_path):
    from musiceval.report import write_run

    rng = np.random.default_rng(4)
    own, other = (rng.random(100) < 0.8).astype(float), np.zeros(100)
    ids = [f"q{k}" for k in range(100)]
    rows = []
    gate = Gate(GateConfig(), sink=rows.append)
    gate.record_scores(ItemScores("accuracy", ids=ids, values=own), gate="g", protocol="choice")
    gate.record_scores(ItemScores("accuracy", ids=ids, values=other), gate="g", protocol="choice")
    rows[0]["model"], rows[1]["model"], rows[1]["source"] = "qwen2", "qwen", "baseline"
    (tmp_path / "new" / "parts").mkdir(parents=True)
    (tmp_path / "new" / "parts" / "gw0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_run(tmp_path / "new", {"model": "qwen2"})
    base = _toy_run(tmp_path, "base", other, model="qwen", fp=_fp("qwen"), ids=ids)
    loaded = results.load(tmp_path / "new").scores
    assert set(loaded.model) == {"qwen2", "qwen"} and set(loaded.source.dropna()) == {"baseline"}
    row = results.compare(base, tmp_path / "new").iloc[0]
    assert row.mean_new == pytest.approx(own.mean()) and row.verdict == "superior"


def test_baseline_hands_score_sets_to_regression_gates(tmp_path):
    from musiceval.results.comparison import Baseline

    rng = np.random.default_rng(6)
    old = (rng.random(200) < 0.7).astype(float)
    path = _toy_run(tmp_path, "base", old, model="qwen", fp=_fp("qwen"))
    base = Baseline(path)
    assert base.label == "qwen" and base.keys() == [("choice", "", "accuracy", "correct")]
    assert base.scores("choice", "", "accuracy").values.tolist() == old.tolist() and base.scores("choice", "", "wer") is None
    assert base.check(_fp("qwen2")) == []
    with pytest.raises(NotComparable, match="mir_parsers"):
        base.check(_fp("qwen2", mir_parsers="mir-parsers-9"))
    assert "no provenance" in base.check(None)[0]
    r = Gate(GateConfig()).non_inferior(base.scores("choice", "", "accuracy"), base.scores("choice", "", "accuracy"),
                                        margin=0.02, name="self", old_label=base.label, new_label="qwen2")
    assert r.outcome is Outcome.PASS


def test_compare_html_page_has_every_comparison_the_leaderboard_and_escapes_names(tmp_path, capsys):
    rng = np.random.default_rng(3)
    base = rng.random(300)
    names = ("m0", "<script>alert(1)</script>", 'm"2&')
    runs = [_toy_run(tmp_path, f"r{k}", ((base + shift) > 0.5).astype(float), model=name, fp=_fp(f"m{k}"))
            for k, (name, shift) in enumerate(zip(names, (0.0, 0.15, -0.15)))]
    page_path = tmp_path / "out" / "compare.html"
    page_path.parent.mkdir()
    assert main(["compare", *map(str, runs), "--html", str(page_path)]) == 0
    capsys.readouterr()
    page = page_path.read_text(encoding="utf-8")
    table = results.compare(*runs)
    assert page.count('<span class="v v-') == len(table) == 3
    for verdict in table.verdict:
        assert f'<span class="v v-{verdict}">{verdict}</span>' in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; vs m0" in page
    assert "m&#34;2&amp;" in page and 'id="leaderboard"' in page
    assert not list(page_path.parent.glob("*.partial"))  # written whole, then renamed


def test_runs_scored_by_two_musiceval_versions_compare_with_a_note_saying_so(tmp_path):
    rng = np.random.default_rng(9)
    old = (rng.random(200) < 0.7).astype(float)
    fp_new = _fp("qwen2")
    fp_new["musiceval"] = "9.9.9"  # every scoring component unchanged
    base = _toy_run(tmp_path, "base", old, model="qwen", fp=_fp("qwen"))
    new = _toy_run(tmp_path, "new", old, model="qwen2", fp=fp_new)
    notes = results.compare(base, new).attrs["notes"]
    assert any("scored by musiceval" in n and "9.9.9" in n for n in notes)
