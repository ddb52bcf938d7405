"""Report merging and results-as-data on hand-written parts (including a torn line)."""
from __future__ import annotations

import json

import pytest

from musiceval import results
from musiceval.cli import main
from musiceval.report import write_run


def _parts(tmp_path):
    parts = tmp_path / "parts"
    parts.mkdir(parents=True)
    rows = [
        {"type": "scores", "gate": "g1", "protocol": "choice", "metric": "acc", "condition": "correct",
         "ids": ["a", "b"], "values": [1.0, 0.0], "groups": None, "failures": [{"item_id": "c", "reason": "no letter"}]},
        {"type": "gate", "name": "g1", "outcome": "PASS", "estimate": 0.2, "ci": [0.1, 0.3], "p_value": 0.01,
         "n": 2, "threshold": 0.25, "test": "exact binomial", "protocol": "choice", "alpha": 0.05},
        {"type": "gate", "name": "g2", "outcome": "PASS", "estimate": 0.1, "ci": [0.01, 0.2], "p_value": 0.04,
         "n": 5, "threshold": 0.0, "test": "paired", "protocol": "freeform", "alpha": 0.05},
        {"type": "table", "protocol": "mir", "name": "CMI-Bench", "rows": [{"task": "GTZAN", "accuracy": 0.4}]},
    ]
    (parts / "gw0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))
    (parts / "gw1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[2:]) + '{"type": "gate", "na')
    return tmp_path


def test_write_run_merges_applies_holm_and_reports_torn_rows(tmp_path):
    run = write_run(_parts(tmp_path), {"seed": 0, "model": "recorded"})
    assert [g["name"] for g in run["gates"]] == ["g1", "g2"]
    # Holm over p = (0.01, 0.04): adjusted (0.02, 0.04)
    assert [g["p_value_holm"] for g in run["gates"]] == pytest.approx([0.02, 0.04])
    assert run["holm_failures"] == []
    assert len(run["errors"]) == 1 and "gw1.jsonl:3" in run["errors"][0]["detail"]
    md = (tmp_path / "report.md").read_text()
    assert "## mir" in md and "| GTZAN | 0.4 |" in md and "unreadable result row" in md


def test_holm_flags_a_pass_that_does_not_survive(tmp_path):
    parts = tmp_path / "parts"
    parts.mkdir()
    gates = [{"type": "gate", "name": f"g{k}", "outcome": "PASS", "estimate": 0.1, "ci": [0.01, 0.2], "p_value": 0.03,
              "n": 9, "threshold": 0.0, "test": "t", "protocol": "p", "alpha": 0.05} for k in range(3)]
    (parts / "main.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gates))
    run = write_run(tmp_path, {})
    assert run["holm_failures"] == ["g0", "g1", "g2"]


def test_results_load_returns_dataframes(tmp_path):
    write_run(_parts(tmp_path), {"seed": 3})
    run = results.load(tmp_path)
    assert run.meta["seed"] == 3
    assert list(run.gates["name"]) == ["g1", "g2"] and run.gates.loc[0, "ci_low"] == 0.1
    assert run.scores[["item_id", "value"]].values.tolist() == [["a", 1.0], ["b", 0.0]]
    assert run.failures.iloc[0].to_dict()["reason"] == "no letter"


def test_results_load_names_the_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="results.json"):
        results.load(tmp_path)


def test_cli_report_rebuilds_from_results_or_parts(tmp_path, capsys):
    _parts(tmp_path)
    assert main(["report", str(tmp_path)]) == 0  # no results.json yet: rebuilt from parts
    assert "report.html" in capsys.readouterr().out
    (tmp_path / "report.html").unlink()
    assert main(["report", str(tmp_path)]) == 0
    assert (tmp_path / "report.html").exists()


def test_cli_report_on_an_empty_directory_is_an_input_error(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("musiceval: error:") and "Traceback" not in err


def test_the_per_item_files_are_compressed_while_the_reports_render_to_the_same_bytes(tmp_path):
    """write_artefacts compresses scores.jsonl.xz and samples.jsonl.xz in threads while it renders the
    reports: the files are xz (preset 2) of the rows as JSON lines, and results.json records their digests."""
    import hashlib
    import lzma

    parts = _parts(tmp_path)
    samples = [{"type": "sample", "protocol": "choice", "model": "m", "source": "s", "item_id": f"q{k}",
                "response": f"answer {k}", "parsed": "A", "scores": {"acc": float(k % 2)}} for k in range(300)]
    (parts / "parts" / "gw2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in samples))
    run = write_run(parts, {"seed": 0, "model": "recorded"})
    want_samples = "".join(json.dumps({k: v for k, v in r.items() if k != "type"}) + "\n" for r in samples)
    assert lzma.decompress((tmp_path / "samples.jsonl.xz").read_bytes()).decode() == want_samples
    for name in ("scores.jsonl.xz", "samples.jsonl.xz"):
        blob = (tmp_path / name).read_bytes()
        assert blob == lzma.compress(lzma.decompress(blob), preset=2)
        assert run["artefacts"][name] == {"sha256": hashlib.sha256(blob).hexdigest(), "bytes": len(blob)}
    assert json.loads((tmp_path / "results.json").read_text())["artefacts"] == run["artefacts"]
    assert (tmp_path / "report.html").stat().st_size and "## choice" in (tmp_path / "report.md").read_text()
