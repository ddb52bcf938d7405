#!/usr/bin/env bash
# Optional: Chromium for looking at reports in a real browser, used only by the report's browser
# test (tests/test_report_browser.py, skipped without it) and scripts/screenshot_report.py.
# Nothing else needs it, so scripts/setup.sh runs this only with MUSICEVAL_INSTALL_BROWSER=1.
#
#   bash scripts/install_browser.sh         # asks (y/N) before installing the Debian package `chromium`
#   bash scripts/install_browser.sh --yes   # installs without asking (CI, scripts)
#
# It installs system-wide, with apt-get (through sudo when not root), so it asks first; without a
# terminal to ask on and without --yes it installs nothing and exits 1.
# Elsewhere: install Chromium with your package manager and point CHROMIUM at the executable.
set -euo pipefail
assume_yes=0
for arg in "$@"; do
  case "$arg" in
    -y|--yes) assume_yes=1 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install_browser: unknown argument '$arg'; pass --yes to install without asking, or nothing to be asked" >&2; exit 2 ;;
  esac
done
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
echo "install_browser: this installs the Debian package chromium (system-wide, with apt-get${SUDO:+ through sudo}):"
echo "  headless Chromium renders report.html for the browser test and for scripts/screenshot_report.py"
if [ "$assume_yes" != 1 ]; then
  if [ ! -t 0 ]; then
    echo "install_browser: not run from a terminal, so it cannot ask; pass --yes to install chromium without asking" >&2
    exit 1
  fi
  read -r -p "install_browser: install chromium now? [y/N] " answer || answer=
  case "$answer" in
    y|Y|yes|YES|Yes) ;;
    *) echo "install_browser: nothing installed (pass --yes to install without asking)"; exit 1 ;;
  esac
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
echo "install_browser: Chromium installed: $(command -v chromium || echo /usr/bin/chromium)"
