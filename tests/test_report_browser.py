"""The report in a real browser: headless Chromium shows the banner, a failed gate, a plot and a sample.

Needs the Debian ``chromium`` package (optional: ``bash scripts/install_browser.sh``) and Python ``playwright`` (the dev extra; its browser download is never
used). Skipped, with the install command, when either is absent.
"""
from __future__ import annotations

import pytest

from musiceval.report.browser import FLAGS, INSTALL_HINT, chromium_path
from tests.report_run import FAILED_GATE, make_run

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def page(tmp_path):
    exe = chromium_path()
    if exe is None:
        pytest.skip(f"Chromium not installed: {INSTALL_HINT}")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the dev extra)")
    make_run(tmp_path)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, headless=True, args=[a for a in FLAGS if a != "--headless"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto((tmp_path / "report.html").as_uri())
        yield page
        browser.close()
        assert errors == [], f"JavaScript errors on the page: {errors}"


def test_banner_failed_gate_plot_and_sample_are_visible(page):
    banner = page.locator("#verdict")
    assert banner.is_visible() and banner.inner_text().startswith("RELEASE GATES: 1 FAILED")
    assert banner.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(198, 40, 40)"  # red
    row = page.locator("table.first tr[data-outcome=FAIL]")
    assert row.is_visible() and FAILED_GATE in row.inner_text()
    # the protocol with a FAIL is open; its forest plot is a decoded, visible image
    plot = page.locator("details#p-choice img.plot").first
    assert plot.is_visible() and plot.evaluate("img => img.decode().then(() => img.naturalWidth)") > 300
    # samples sit collapsed; a click opens them and the filter narrows to the unmapped answer
    samples = page.locator("details#samples-p-choice")
    samples.locator("summary").click()
    first = samples.locator("tr.sample").first
    first.wait_for(state="visible", timeout=10_000)  # rows are decompressed and drawn when first opened
    assert samples.get_attribute("data-rendered") == "1" and "Which instrument plays" in first.inner_text()
    samples.locator("select.sample-filter").select_option("unmapped")
    visible = [r for r in samples.locator("tr.sample").all() if r.is_visible()]
    assert len(visible) == 2 and all("I cannot tell." in r.inner_text() for r in visible)
    assert samples.locator(".sample-count").inner_text() == "2 shown"
    samples.locator("select.sample-filter").select_option("drops")
    visible = [r for r in samples.locator("tr.sample").all() if r.is_visible()]
    assert [r.get_attribute("data-drop-rank") for r in visible] == ["1", "1"]


def test_findings_and_skipped_start_collapsed(page):
    assert not page.get_by_text("cider: adversarial - skyline").first.is_visible()
    page.locator("details.findings summary", has_text="freeform").click()
    assert page.get_by_text("cider: adversarial - skyline").first.is_visible()
    assert page.locator("#skipped").is_visible()


def test_screenshot_script_writes_a_png(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    if chromium_path() is None:
        pytest.skip(f"Chromium not installed: {INSTALL_HINT}")
    make_run(tmp_path)
    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "shot.png"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(root / "scripts" / "screenshot_report.py"), str(tmp_path), "-o", str(out)],
                          capture_output=True, text=True, timeout=150, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width == 1280 and height > 600  # the whole page, not an empty viewport
