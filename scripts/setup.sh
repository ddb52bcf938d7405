#!/usr/bin/env bash
# Set up .venv for musiceval: CPU torch 2.13.0 first (so nothing pulls CUDA wheels), then the
# package with [dev], then WordNet for METEOR. Idempotent; a no-op in seconds when already done
# (re-runs pip only when pyproject.toml changed).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.musiceval-setup-$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  if ! .venv/bin/python -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" 2>/dev/null; then
    .venv/bin/python -m pip install -q torch==2.13.0
  fi
  .venv/bin/python -m pip install -q -e ".[dev]"
  # renders the synthesised audio fixtures from MIDI; its pyaudio dependency does not build
  # and is not needed, hence --no-deps (it cannot be expressed in an extra)
  .venv/bin/python -m pip install -q --no-deps "tinysoundfont>=0.3.7"
  # aac-metrics, the FENSE reference of tests/metrics/test_fense.py; FENSE needs none of its other
  # declared dependencies (msclap pins numpy<2, and its pythonwrench pin is not on PyPI), hence --no-deps
  .venv/bin/python -m pip install -q --no-deps "aac-metrics==0.6.0" "pythonwrench==0.6.8" \
    "torchmetrics==1.9.0" "lightning-utilities==0.15.3"
  rm -f .venv/.musiceval-setup-*
  touch "$stamp"
fi
if [ -f scripts/install_wordnet.sh ]; then
  NLTK_DATA="${NLTK_DATA:-$PWD/.venv/nltk_data}" bash scripts/install_wordnet.sh
fi
# Chromium for the report's browser test (tests/test_report_browser.py) and
# scripts/screenshot_report.py: the Debian package, installed only when absent, only as root with
# apt-get; otherwise the command is printed and setup goes on (the test skips without it).
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "setup: could not install chromium; run: apt-get update && apt-get install -y chromium" >&2
  else
    echo "setup: chromium not found (the report browser test will skip); as root run: apt-get update && apt-get install -y chromium" >&2
  fi
fi
