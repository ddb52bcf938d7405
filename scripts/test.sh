#!/usr/bin/env bash
# Set up (idempotent, fast when done) and run the unit and property tests.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
# The tests start about a hundred Python processes (pytest sessions of scratch projects, musiceval
# commands). Without bytecode caches each one compiles musiceval's modules again and every pytest
# session rewrites its test modules again, so Python may write __pycache__/ (git-ignored) here even
# where PYTHONDONTWRITEBYTECODE is set: 246 s -> 195 s on a 2-core machine (docs/performance.md).
unset PYTHONDONTWRITEBYTECODE
exec .venv/bin/python -m pytest tests/ -n 2 "$@"
