"""The first screen of a report: the verdict word, every reason whole (grouped by cause), then the
failed and undecided gates of the declared model, before any plot or drill-down; numbers with the
digits their intervals support; a coverage bar that can be met."""
from __future__ import annotations

import json
import re

import pytest
from markupsafe import escape

from musiceval.report import write_reports
from musiceval.report.reasons import Reason, group
from musiceval.report.render import gate_view
from musiceval.report.view import scrub_paths, shorten
from tests.report_error_run import CAUSE, ERRORED, FAILED, FOLDED, PER_TEST, make_error_run

#: the cause as the report shows it (machine paths shortened)
SHOWN_CAUSE = scrub_paths(CAUSE)


@pytest.fixture(scope="module", params=["per-test", "folded"])
def error_run(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"error-run-{request.param}")
    errors = PER_TEST if request.param == "per-test" else FOLDED
    return d, make_error_run(d, errors), errors


def _first_screen_end(text: str, *marks: str) -> int:
    """Where the first plot or drill-down starts (the end of the first screen)."""
    found = [text.index(m) for m in marks if m in text]
    assert found, f"none of {marks} in the report"
    return min(found)


def test_results_json_holds_every_reason_whole(error_run):
    _, run, errors = error_run
    assert run["verdict"] == "ERROR" and run["verdict_detail"]["reasons"] == errors


def test_html_first_screen_has_the_word_every_reason_whole_and_every_failed_gate(error_run):
    d, _, errors = error_run
    html = (d / "report.html").read_text(encoding="utf-8")
    body = html[html.index("<body>"):]
    end = _first_screen_end(body, '<img class="plot"', 'class="more samples"', 'id="p-')
    first = body[:end]
    banner = first[first.index('id="verdict"'):first.index("</div>", first.index('id="verdict"'))]
    assert 'data-verdict="ERROR"' in banner and "musiceval: ERROR: M:" in banner
    assert "LookupError" not in banner  # the reason is listed whole below the banner, not cut inside it
    # the ten reasons of one cause are one line, whole, escaped, and only once
    assert first.count(str(escape(SHOWN_CAUSE))) == 1 and body.count("LookupError") == 1 and "10 tests" in first
    if errors == PER_TEST:
        assert str(escape(scrub_paths(f"10 tests: raised: {CAUSE}"))) in first and all(node in first for node in ERRORED)
    table = first[first.index('id="attention"'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r'<tr class="gate" data-outcome="(\w+)">(.*?)</tr>', table)
    assert [o for o, _ in rows].count("FAIL") == 27  # 26 gates and the coverage gate
    assert all(any(name in cells for _, cells in rows) for name in FAILED)


def test_md_first_screen_has_the_word_every_reason_whole_and_every_failed_gate(error_run):
    d, _, errors = error_run
    md = (d / "report.md").read_text(encoding="utf-8")
    end = _first_screen_end(md, "![", "Samples:", "\n## mir")
    first = md[:end]
    assert first.index("**musiceval: ERROR: M:") < first.index(SHOWN_CAUSE) < first.index("## Failed and undecided gates (27)")
    assert md.count("LookupError") == 1 and "10 tests" in first
    table = first[first.index("## Failed and undecided gates"):]
    assert table.count("\n| FAIL |") == 27 and all(name in table for name in FAILED)


_LONG_DECIMALS = re.compile(r"\d\.\d{5,}")


def _visible(html: str) -> str:
    """The text a person reads: without the embedded plots and sample data."""
    html = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    return re.sub(r'src="data:[^"]*"', "", html)


def test_numbers_carry_the_digits_their_interval_supports(error_run):
    d, _, _ = error_run
    html, md = _visible((d / "report.html").read_text(encoding="utf-8")), (d / "report.md").read_text(encoding="utf-8")
    for text in (html, md):
        # -0.0735284712 in [-0.1234567891, -0.0234567891]: half-width 0.05, two digits of it -> 3 decimals
        assert "-0.074 [-0.123, -0.023]" in text
        # numbers without an interval: 4 significant digits
        assert "detectable effect 3.547" in text and "3.5473" not in text
        assert "chance (0.25)" in text
        assert not _LONG_DECIMALS.findall(text), _LONG_DECIMALS.findall(text)[:5]
    # a mean with its interval (half-width 0.03: 3 decimals) against a 4-significant-digit bar
    assert "0.971" in html and "[0.931, 0.991]" in html and "≥ 0.9123" in html


def test_the_coverage_bar_is_met_at_the_bar_never_above_one(error_run):
    d, _, _ = error_run
    html = (d / "report.html").read_text(encoding="utf-8")
    row = next(r for r in re.findall(r'<tr class="gate" data-outcome="FAIL">(.*?)</tr>', html) if "covers 150" in r)
    assert "≥ 1</td>" in row and "&gt; 1" not in row and "0.1264 exact" in row
    assert "is at or above 1 (every item counted: no interval)" in row
    md = (d / "report.md").read_text(encoding="utf-8")
    assert "| ≥ 1 |" in md and "| > 1 |" not in md


def _coverage(share: float, minimum: float = 1.0) -> dict:
    return {"name": "covers", "outcome": "FAIL" if share < minimum else "PASS", "estimate": share, "ci": (share, share),
            "threshold": minimum, "metric": "coverage", "test": "census: every item counted, no sampling uncertainty",
            "higher_is_better": True}


def test_a_coverage_card_reads_its_bar_as_at_least():
    view = gate_view(_coverage(0.8, 0.9))
    assert view["bar"] == "≥ 0.9" and view["est"] == "0.8" and view["interval"] == "exact"
    # a share just short of a bar of 1 never reads as meeting it
    short = gate_view(_coverage(0.99996))
    assert (short["est"], short["bar"]) == ("0.99996", "≥ 1")


def test_an_oriented_difference_reads_above_its_bar_whatever_the_metric_direction():
    """A regression gate on a lower-is-better metric records better minus worse: PASS above -margin."""
    g = {"name": "wer not worse", "outcome": "PASS", "estimate": 0.01, "ci": (-0.005, 0.02), "threshold": -0.02,
         "metric": "wer", "test": "non_inferior (lower is better): paired t; shape=continuous", "higher_is_better": False}
    view = gate_view(g)
    assert view["bar"] == "> -0.02" and "lower end of the 95% interval" in view["rule"] and "above -0.02" in view["rule"]


def test_reasons_of_one_cause_fold_and_others_stay_whole():
    reasons = [f"evals/t.py::test_a[{k}] raised: boom" for k in range(3)] + [
        "evals/t.py::test_b timed out: Failed: Timeout >300.0s", "FAIL: g1", "FAIL: g2",
        "collecting evals/x.py failed: ImportError: no module y", "the report could not be written", "the report could not be written"]
    assert group(reasons) == [
        Reason("3 tests: raised: boom", tuple(f"evals/t.py::test_a[{k}]" for k in range(3))),
        Reason("evals/t.py::test_b timed out: Failed: Timeout >300.0s"),
        Reason("2 gates: FAIL", ("g1", "g2")),
        Reason("collecting evals/x.py failed: ImportError: no module y"),
        Reason("2 times: the report could not be written"),
    ]


def test_reasons_on_the_first_screen_are_escaped(tmp_path):
    evil = "<script>alert(1)</script>"
    run = {"meta": {"models": [{"name": "M"}]}, "verdict": "ERROR", "gates": [{"name": "g", "outcome": "PASS", "model": "M"}],
           "verdict_detail": {"line": f"musiceval: ERROR: M: 1 of 1 required gates passed; x::t raised: {evil}",
                              "reasons": [f"x::t{k} raised: {evil}" for k in range(2)], "models": ["M"]}}
    write_reports(tmp_path, json.loads(json.dumps(run)))
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert evil not in html and "2 tests: raised: &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>" not in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_skipped_required_gates_are_on_the_first_screen_and_others_are_not(tmp_path):
    gates = [{"name": "needed", "outcome": "SKIPPED", "model": "M", "check": "choice/accuracy/M/a", "detail": "no data"},
             {"name": "optional", "outcome": "SKIPPED", "model": "M", "check": "mir/beats/M/a", "detail": "no data"},
             {"name": "ok", "outcome": "PASS", "model": "M", "check": "choice/accuracy/M/b"}]
    from musiceval.verdict import decide

    verdict = decide(gates, declared=["M"], required=["choice/*"])  # a stored word must be the gates' own
    run = {"meta": {"models": [{"name": "M"}], "required": ["choice/*"]}, "gates": gates,
           "verdict": verdict.word, "verdict_detail": verdict.as_dict()}
    write_reports(tmp_path, run)
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    table = html[html.index('id="attention"'):]
    table = table[:table.index("</table>")]
    assert "<td>needed<" in table and "<td>optional<" not in table and "<td>ok<" not in table


def test_shorten_never_cuts_a_word():
    text = "x" * 30 + " " + " ".join(["corpora/wordnet"] * 20)
    short, cut = shorten(text, 100)
    assert cut and short.endswith("corpora/wordnet …") and len(short) <= 102
