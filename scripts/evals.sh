#!/usr/bin/env bash
# The main job: set up (idempotent) and run the release gates on the embedded default.
# Extra arguments go to pytest, e.g. `bash scripts/evals.sh --musiceval-strict --musiceval-model hf:Qwen/Qwen2-Audio-7B-Instruct`.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
rc=0
.venv/bin/python -m pytest evals/ -n 4 "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "musiceval: pytest collected no evals (exit 5): a release run must run its gates" >&2
  exit 1
fi
exit "$rc"
