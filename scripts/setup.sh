#!/usr/bin/env bash
# Set up .venv for musiceval: CPU torch 2.13.0 first (so nothing pulls CUDA wheels), then the
# package with [dev], then WordNet for METEOR (`musiceval setup`). Idempotent; a no-op in seconds
# when already done (re-runs pip only when pyproject.toml changed). Says what it installs, and why,
# before it does.
#
# Python packages go into .venv only. System-wide, with apt-get: WordNet 3.0 (Debian's
# wordnet-base and wordnet-sense-index; METEOR needs it) when /usr/share/wordnet lacks it, and
# Chromium only when asked (MUSICEVAL_INSTALL_BROWSER=1, or bash scripts/install_browser.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.musiceval-setup-$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "setup: installing Python packages into .venv (nothing outside it):"
  echo "  torch 2.13.0, the CPU wheel, first (an unpinned torch pulls several GB of CUDA packages);"
  echo "  musiceval[dev], editable: the suite, the reference implementations its tests compare against, test and docs tools;"
  echo "  tinysoundfont (renders the audio fixtures) and aac-metrics (FENSE's reference), without their unneeded dependencies"
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
# WordNet 3.0 for METEOR (it refuses to run without it): `musiceval setup` copies Debian's files into
# .venv/nltk_data (<sys.prefix>/nltk_data of the venv, which nltk and conftest.py search; $NLTK_DATA's
# first entry when set). The Debian packages are installed first when /usr/share/wordnet lacks them.
if ! .venv/bin/musiceval setup --check >/dev/null; then
  if [ ! -s /usr/share/wordnet/data.noun ] || [ ! -s /usr/share/wordnet/index.sense ]; then
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then SUDO=sudo; else SUDO=; fi
    echo "setup: installing the Debian packages wordnet-base and wordnet-sense-index (WordNet 3.0," \
         "system-wide, with apt-get${SUDO:+ through sudo}): METEOR's synonym stage needs them;" \
         "\`musiceval setup\` then copies them to ${NLTK_DATA:-.venv/nltk_data}"
    $SUDO apt-get install -y --no-install-recommends wordnet-base wordnet-sense-index >/dev/null \
      || { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y --no-install-recommends wordnet-base wordnet-sense-index >/dev/null; }
  fi
  .venv/bin/musiceval setup
fi
# Chromium (report screenshots, the report's browser test) is optional and system-wide: only on request
if [ "${MUSICEVAL_INSTALL_BROWSER:-0}" = "1" ]; then
  bash scripts/install_browser.sh --yes
fi
