"""The report a person reads: verdict, consistent scales, per-family plots, samples, no machine paths."""
from __future__ import annotations

import base64
import lzma
import json
import re

import pytest

from musiceval.report import verdict, write_reports
from musiceval.report.view import scale, scrub_paths
from tests.report_run import FAILED_GATE, make_run


@pytest.fixture
def run_dir(tmp_path):
    make_run(tmp_path)
    return tmp_path


def test_verdict_rule():
    g = lambda o, role=None: {"outcome": o, "role": role}  # noqa: E731
    assert verdict([g("PASS"), g("FAIL")]) == "FAILED"
    assert verdict([g("PASS"), g("SKIPPED"), g("FINDING")]) == "PASSED"
    assert verdict([g("PASS"), g("INCONCLUSIVE")]) == "INCONCLUSIVE"
    assert verdict([g("SKIPPED")]) == "NOTHING DECIDED"
    # a FAIL demoted to a finding by config does not fail the run
    assert verdict([g("PASS"), g("FAIL", role="finding (demoted by config)")]) == "PASSED"


def test_banner_and_failed_gate_come_first(run_dir):
    html = (run_dir / "report.html").read_text()
    run = json.loads((run_dir / "results.json").read_text())
    assert run["verdict"] == "FAILED"
    body = html[html.index("<body>"):]
    assert body.index("RELEASE GATES: 1 FAILED") < body.index(FAILED_GATE) < body.index("instruction-following rate")
    # the failed gate's row states what its number is, with its interval and bar, on one scale, and the rule
    row = body[body.index('<tr class="gate" data-outcome="FAIL">'):]
    row = row[:row.index("</tr>")]
    assert FAILED_GATE in row and "accuracy difference from chance (0-1)" in row
    assert "-0.150 [-0.240, -0.050]" in row and "&gt; 0<" in row and "detectable effect 0.18" in row
    assert 'title="PASS when the lower end of the 95% interval' in row
    md = (run_dir / "report.md").read_text()
    assert md.index("RELEASE GATES: 1 FAILED") < md.index("## Failed and undecided gates (3)") < md.index("## choice")


def test_scales_name_what_the_number_is():
    mean = scale({"test": "bootstrap CI of the mean (bca)", "metric": "ifr", "threshold": 0.9, "outcome": "PASS"})
    assert (mean["what"], mean["bar"]) == ("mean ifr", 0.9)
    chance = scale({"test": "exact binomial test", "metric": "accuracy", "threshold": 0.25, "outcome": "PASS"})
    assert (chance["what"], chance["bar"], chance["chance"]) == ("accuracy minus chance (0.25)", 0.0, 0.25)
    paired = scale({"test": "paired bootstrap CI", "metric": "bleu", "threshold": 0.01, "outcome": "FAIL"})
    assert (paired["bar"], paired["kind"]) == (0.01, "difference")


def test_one_plot_per_protocol_and_metric_family(run_dir):
    names = sorted(p.name for p in (run_dir / "plots").iterdir())
    # CIDEr (0-10) and BLEU (0-1) findings never share an axis
    assert any("cider" in n for n in names) and any("bleu" in n for n in names)
    assert not any("cider" in n and "bleu" in n for n in names)
    html = (run_dir / "report.html").read_text()
    embedded = re.findall(r'title="(plots/[^"]+)" src="data:image/svg\+xml;base64,([^"]+)"', html)
    assert sorted(f for f, _ in embedded) == [f"plots/{n}" for n in names]
    # the embedded bytes are the SVG files, unaltered by escaping or path scrubbing
    assert all(base64.b64decode(b) == (run_dir / f).read_bytes() for f, b in embedded)
    # each is a well-formed SVG whose every gate row has its label, interval line and estimate dot
    import xml.etree.ElementTree as ET

    ns = "{http://www.w3.org/2000/svg}"
    forest = ET.fromstring((run_dir / "plots" / next(n for n in names if "cider" in n)).read_bytes())
    labels = [t.text for t in forest.iter(f"{ns}text")]
    assert "cider: adversarial - skyline" in labels and len(list(forest.iter(f"{ns}circle"))) == 1


def test_plot_labels_from_result_files_are_escaped(tmp_path):
    from musiceval.report.plots import forest

    svg = forest("<t>", "what & why", [{"name": "</text><script>x</script>", "outcome": "FINDING", "estimate": 0.5,
                                        "ci": [0.4, 0.6], "metric": "m", "test": "finding"}])[0].decode()
    assert "<script>" not in svg and "&lt;/text&gt;&lt;script&gt;" in svg and "what &amp; why" in svg


def test_nice_ticks_cover_the_range_with_round_steps():
    from musiceval.report.plots import nice_ticks

    assert nice_ticks(0.0, 1.0) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(-0.24, 1.0) == [0.0, 0.5, 1.0]
    assert nice_ticks(0.0, 10.0) == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert nice_ticks(1.0, 1.0) == [1.0]


def test_findings_and_skips_are_collapsed_with_full_reason_on_demand(run_dir):
    html = (run_dir / "report.html").read_text()
    findings = html[html.index('id="findings"'):html.index('id="skipped"')]
    assert '<details class="proto findings">' in findings and "cider: adversarial - skyline" in findings
    skipped = html[html.index('id="skipped"'):]
    assert "<details" in skipped and skipped.count("(musiceval multiple-choice layout)") == 8  # full text, once


def _samples(html: str, protocol: str = "choice") -> list[dict]:
    from musiceval.report.sample_data import decode

    return decode(html)[protocol]


def test_samples_drill_down_with_filters(run_dir):
    html = (run_dir / "report.html").read_text()
    rows = _samples(html)
    assert len(rows) == 24 and sum(r["unmapped"] for r in rows) == 2
    assert all(r["answer"] == "I cannot tell." for r in rows if r["unmapped"])
    assert 'value="unmapped"' in html and 'value="drops"' in html
    # q0 is the only item whose Correct score is below its Random score: both its rows carry rank 1
    assert [(r["item"], r.get("rank")) for r in rows if "rank" in r] == [("q0", 1), ("q0", 1)]
    assert "accuracy -1" in [r.get("drop") for r in rows]
    # the rows are data, drawn on demand: no table rows in the markup, and the data is small
    assert '<tr class="sample' not in html and len(html) < 60_000


def test_samples_are_capped(tmp_path, monkeypatch):
    from musiceval.report import render

    monkeypatch.setattr(render, "MAX_SAMPLES_PER_PROTOCOL", 5)
    make_run(tmp_path)
    html = (tmp_path / "report.html").read_text()
    rows = _samples(html)
    assert len(rows) == 5 and "5 of 24 shown" in html
    assert any(r["unmapped"] for r in rows)  # the unmapped answer is kept within the cap


def test_no_machine_paths(tmp_path):
    make_run(tmp_path, [{"type": "table", "protocol": "live", "name": "accuracy on fixtures (hf:/tmp/pytest-of-root/gw1/tiny-qwen2)",
                         "rows": [{"model": "/home/alice/models/qwen", "plot": str(tmp_path / "plots" / "x.png")}]}])
    for name in ("report.html", "report.md"):
        text = (tmp_path / name).read_text()
        assert "/tmp/" not in text and "/home/" not in text and str(tmp_path) not in text
        assert "…/tiny-qwen2" in text and "…/qwen" in text and "plots/x.png" in text


def test_scrub_keeps_urls_and_relative_paths():
    assert scrub_paths("see https://example.org/a/b and plots/x.png") == "see https://example.org/a/b and plots/x.png"
    assert scrub_paths("hf:/root/m/tiny, thresholds /work/main/evals/thresholds.toml") == "hf:…/tiny, thresholds …/thresholds.toml"


def test_optional_keys_absent_still_render(tmp_path):
    run = {"meta": {}, "gates": [{"name": "g", "outcome": "PASS"}]}
    out = write_reports(tmp_path, run)
    assert out["verdict"] == "PASSED" and out["problems"] == []
    assert "RELEASE GATES PASSED" in (tmp_path / "report.html").read_text()


def test_sample_rows_in_parts_become_samples_jsonl_gz(tmp_path):
    from tests.report_run import samples

    parts = tmp_path / "parts"
    parts.mkdir()
    rows = [{"type": "gate", "name": "g", "outcome": "PASS", "protocol": "choice"}]
    rows += [{"type": "sample", **s} for s in samples()[:4]]
    (parts / "gw0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    from musiceval.report import write_run

    write_run(tmp_path, {})
    lines = [json.loads(x) for x in lzma.open(tmp_path / "samples.jsonl.xz", "rt").read().splitlines()]
    assert [s["item_id"] for s in lines] == ["q0", "q0", "q1", "q1"] and "type" not in lines[0]
    assert len(_samples((tmp_path / "report.html").read_text())) == 4


def test_rule_follows_higher_is_better():
    from musiceval.report.view import rule

    g = {"test": "bootstrap CI of the mean (bca)", "metric": "wer", "threshold": 0.3, "outcome": "PASS",
         "higher_is_better": False, "alpha": 0.1}
    text = rule(g, scale(g))
    assert text.startswith("PASS when the upper end of the 90% interval of the mean wer is at or below 0.3")


def test_a_parse_rate_gate_shows_its_threshold_as_the_bar_not_a_chance_level():
    from musiceval.report.view import scale

    g = {"outcome": "FAIL", "metric": "parse_rate", "threshold": 0.5, "bar": 0.5, "estimate": 0.09,
         "test": "calibrated interval of the mean (exact binomial test + Clopper-Pearson CI; shape=binary)"}
    sc = scale(g)
    assert sc["bar"] == 0.5 and sc["chance"] is None and sc["kind"] == "mean"
    census = {**g, "test": "census: every item counted, no sampling uncertainty", "metric": "coverage"}
    assert scale(census)["bar"] == 0.5 and "counted exactly" in scale(census)["what"]
