#!/usr/bin/env bash
# Optional: Chromium for looking at reports in a real browser, used only by the report's browser
# test (tests/test_report_browser.py, skipped without it) and scripts/screenshot_report.py.
# Nothing else needs it, so scripts/setup.sh runs this only with MUSICEVAL_INSTALL_BROWSER=1.
#
#   bash scripts/install_browser.sh       # the Debian package `chromium`, system-wide, with apt-get
#
# Elsewhere: install Chromium with your package manager and point CHROMIUM at the executable.
set -euo pipefail
if [ -n "${CHROMIUM:-}" ] && [ -x "$CHROMIUM" ] || command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then
  echo "install_browser: Chromium is already installed"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_browser: no apt-get here; install Chromium with your package manager and set CHROMIUM=/path/to/chromium" >&2
  exit 1
fi
if [ "$(id -u)" = "0" ]; then
  SUDO=
elif command -v sudo >/dev/null 2>&1; then
  SUDO=sudo
else
  echo "install_browser: installing a system package needs root; run as root: apt-get update && apt-get install -y chromium" >&2
  exit 1
fi
echo "install_browser: installing the Debian package chromium (system-wide, with apt-get${SUDO:+ through sudo}):"
echo "  headless Chromium renders report.html for the browser test and for scripts/screenshot_report.py"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
echo "install_browser: Chromium installed: $(command -v chromium || echo /usr/bin/chromium)"
