"""Screenshot a musiceval report for people: ``python scripts/screenshot_report.py RESULTS_DIR [-o PNG]``.

Renders ``RESULTS_DIR/report.html`` (rebuilding it first with ``--rebuild``) in headless
Chromium and writes a PNG of the whole page (``--expand`` opens every collapsed section first).
Needs Chromium (optional: ``bash scripts/install_browser.sh``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from musiceval.report import ResultsError, rebuild
from musiceval.report.browser import INSTALL_HINT, chromium_path, screenshot


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("-o", "--output", type=Path, help="PNG to write (default RESULTS_DIR/report.png)")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--expand", action="store_true", help="open every collapsed section before the screenshot")
    ap.add_argument("--rebuild", action="store_true", help="rebuild report.html from results.json first")
    args = ap.parse_args(argv)
    html = args.results_dir / "report.html"
    if args.rebuild or not html.is_file():
        try:
            rebuild(args.results_dir)
        except ResultsError as exc:
            print(f"screenshot_report: {exc}", file=sys.stderr)
            return 2
    if chromium_path() is None:
        print(f"screenshot_report: Chromium not found; install it: {INSTALL_HINT}", file=sys.stderr)
        return 2
    out = screenshot(html, args.output or args.results_dir / "report.png", width=args.width, expand=args.expand)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
