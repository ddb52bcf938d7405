#!/usr/bin/env bash
# Set up (idempotent, fast when done) and run the unit and property tests.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
exec .venv/bin/python -m pytest tests/ -n 2 "$@"
