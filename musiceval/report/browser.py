"""Headless Chromium for looking at a report: shared by the browser test and scripts/screenshot_report.py.

Chromium is optional and comes from the Debian package (``bash scripts/install_browser.sh``, or
``MUSICEVAL_INSTALL_BROWSER=1 bash scripts/setup.sh``). Python Playwright drives it when installed (``pip install
playwright``; its own browser download is never used: ``executable_path`` points at the system
Chromium); otherwise Chromium's own ``--headless --screenshot`` is used.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

INSTALL_HINT = "bash scripts/install_browser.sh  (apt-get install -y chromium, as root)"
#: offline, sandbox-free flags; a fresh --user-data-dir is added per launch
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars"]


def chromium_path() -> str | None:
    """The Chromium executable (``$CHROMIUM``, /usr/bin/chromium, or chromium on PATH), or None."""
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def screenshot(html: Path, png: Path, *, width: int = 1280, height: int = 2400, expand: bool = False) -> Path:
    """Render ``html`` in headless Chromium and save a PNG (the whole page with Playwright)."""
    exe = chromium_path()
    if exe is None:
        raise FileNotFoundError(f"Chromium not found; install it: {INSTALL_HINT}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    with tempfile.TemporaryDirectory(prefix="musiceval-chromium-") as profile:
        if sync_playwright is None:
            subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
                            f"--screenshot={png}", html.resolve().as_uri()], check=True, capture_output=True, timeout=120)
            return png
        with sync_playwright() as p:
            # Playwright gives every launch a fresh temporary profile (its own --user-data-dir)
            browser = p.chromium.launch(executable_path=exe, headless=True, args=[a for a in FLAGS if a != "--headless"])
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.goto(html.resolve().as_uri())
            if expand:
                page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
                # opened sample tables are decompressed and drawn asynchronously: wait until each is
                page.wait_for_function("!document.querySelector('details.samples:not([data-rendered=\"1\"])"
                                       ":not([data-rendered=\"failed\"])')", timeout=60_000)
            page.screenshot(path=str(png), full_page=True)
            browser.close()
    return png
