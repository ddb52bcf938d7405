"""Report hardening: escaped values, confined file names, malformed result files (docs/hardening.md)."""
from __future__ import annotations

import json

import pytest

from musiceval.cli import main
from musiceval.report import read_parts, write_reports, write_run

XSS = 'p" onerror="alert(1)" x="'


def _gate(**kw):
    g = {"name": "g", "outcome": "PASS", "estimate": 0.3, "ci": [0.1, 0.5], "threshold": 0.0,
         "test": "paired bootstrap CI", "protocol": "p", "metric": "m"}
    g.update(kw)
    return g


def _results(tmp_path, run):
    d = tmp_path / "results"
    d.mkdir()
    (d / "results.json").write_text(run if isinstance(run, str) else json.dumps(run), encoding="utf-8")
    return d


def test_protocol_with_dot_dot_writes_nothing_outside(tmp_path):
    d = _results(tmp_path, {"meta": {}, "gates": [_gate(protocol="../../pwned"), _gate(protocol="/abs/pwned")],
                            "bars": [{"protocol": "../../pwned", "name": "b", "values": {"x": 1.0}}]})
    assert main(["report", str(d)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]
    plots = list(tmp_path.rglob("*.svg"))
    assert plots and all(p.parent == d / "plots" for p in plots)
    assert all(set(p.name) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") for p in plots)


def test_every_value_is_escaped(tmp_path):
    d = _results(tmp_path, {"meta": {"model": "<script>alert(2)</script>"},
                            "gates": [_gate(protocol=XSS, name="<img src=x onerror=alert(3)>", detail="</td><b>x</b>")],
                            "tables": [{"protocol": XSS, "name": "<i>t</i>", "rows": [{"<c>": "<v>"}]}]})
    write_reports(d, json.loads((d / "results.json").read_text()))
    html = (d / "report.html").read_text()
    assert XSS not in html and 'onerror="alert(1)"' not in html
    assert "p&#34; onerror=&#34;alert(1)&#34; x=&#34;" in html
    assert "<script>alert(2)" not in html and "<img src=x" not in html and "<b>x</b>" not in html and "<v>" not in html
    md = (d / "report.md").read_text()
    assert "<script>" not in md and "<img src=x" not in md


@pytest.mark.parametrize("content, field", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "top level is list"),
    ('{"gates": {"a": 1}}', "field 'gates'"),
    ("[" * 5000 + "]" * 5000, "nested"),
    ('{"gates": [' + "[" * 200 + "]" * 200 + "]}", "nested"),
    ('{"gates": [], "n": ' + "9" * 5000 + "}", "not valid JSON"),
])
def test_unusable_results_json_exits_2_naming_file_and_field(tmp_path, capsys, content, field):
    d = _results(tmp_path, content)
    assert main(["report", str(d)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("musiceval: error:") and "results.json" in err and field in err and "Traceback" not in err


def test_bad_gate_rows_are_skipped_and_counted(tmp_path, capsys):
    gates = [_gate(name="ok"), {"outcome": "PASS"}, _gate(outcome="MAYBE"), "a string", _gate(name="nan", estimate=float("nan"),
             ci=[float("-inf"), 1e400], n="ten", higher_is_better="yes"), _gate(name="x" * 200_000, detail="y" * 200_000),
             _gate(name="deep", detail=[[[[[[["z"]]]]]]]), _gate(name="wrong", ci="[0, 1]", threshold="0.5", p_value=[1])]
    d = _results(tmp_path, json.dumps({"meta": "not a dict", "gates": gates, "tables": {"x": 1},
                                       "bars": [{"values": "no"}]}, allow_nan=True))
    assert main(["report", str(d)]) == 0
    out = capsys.readouterr().out
    assert "6 bad row(s) skipped" in out  # gates[1], gates[2], gates[3], meta, tables, bars[0]
    html = (d / "report.html").read_text()
    assert "gates[1]: field &#39;name&#39; missing" in html and "gates[2] (g): field &#39;outcome&#39; is &#39;MAYBE&#39;" in html
    assert "field &#39;meta&#39; is str" in html and "bars[0]: field &#39;values&#39;" in html
    assert len(html) < 200_000  # huge strings are clipped for display


def test_malformed_parts_rows_are_counted_errors_not_crashes(tmp_path):
    parts = tmp_path / "parts"
    parts.mkdir()
    lines = [json.dumps({"type": "gate", "outcome": "PASS"}), json.dumps(["list"]), json.dumps({"type": "weird"}),
             json.dumps({"type": "scores", "ids": "x"}), "[" * 3000 + "]" * 3000, '{"type": "gate", "name": "n", "outcome": "PASS", "estimate": NaN}',
             json.dumps({"type": "gate", "name": "fine", "outcome": "FAIL", "protocol": "p"})]
    (parts / "gw0.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = read_parts(tmp_path)
    errors = [r["detail"] for r in rows if r["type"] == "error"]
    assert len(errors) == 5 and all(e.startswith("gw0.jsonl:") for e in errors)
    assert "field 'name' missing" in errors[0] and "nested" in errors[4]
    run = write_run(tmp_path, {})
    assert [g["name"] for g in run["gates"]] == ["n", "fine"] and run["gates"][0]["estimate"] is None
    assert run["verdict"] == "FAILED"


def test_malformed_samples_lines_are_counted(tmp_path):
    d = _results(tmp_path, {"meta": {}, "gates": [_gate()]})
    (d / "samples.jsonl").write_text('{"item_id": "a", "protocol": "p", "answer": "<b>hi</b>", "parsed": null}\n'
                                     "not json\n[1]\n" + '{"item_id": {"x": 1}}\n', encoding="utf-8")
    out = write_reports(d, json.loads((d / "results.json").read_text()))
    assert out["problems"] == ["samples.jsonl: 3 line(s) skipped; first: samples.jsonl:2: not valid JSON "
                               "(malformed JSON: Expecting value at column 1)"]
    from musiceval.report.sample_data import decode

    (row,) = decode((d / "report.html").read_text())["p"]
    assert row["answer"] == "<b>hi</b>" and row["unmapped"]  # data, drawn with textContent: never markup
