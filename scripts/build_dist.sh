#!/usr/bin/env bash
# Build the sdist and the wheel into dist/ and check them (docs/releasing.md): twine's check of the
# metadata and of the README as PyPI renders it (--strict: warnings fail too), then
# scripts/check_dist.py (one of each, the version of pyproject.toml, the wheel holds what the gates
# read at run time and none of tests/, fixtures/, evals/). .ci/run calls it; the release workflow
# (.github/workflows/release.yml) runs it on a tag before publishing.
#
# `python -m build` builds the sdist, then the wheel from the sdist: what a user who installs the
# sdist gets is checked too, and the checkout gets no build/ folder. The build is isolated (a
# fresh environment with pyproject.toml's build-system.requires from the index), as the release
# workflow builds, so a missing build requirement fails here first. Offline, with the setuptools of
# .venv: MUSICEVAL_BUILD_ISOLATION=0 bash scripts/build_dist.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
if ! "$PYTHON" -c "import build, twine" 2>/dev/null; then
  echo "build_dist: $PYTHON lacks build or twine; install the dev extra: $PYTHON -m pip install -e '.[dev]'" >&2
  exit 1
fi
isolation=()
if [ "${MUSICEVAL_BUILD_ISOLATION:-1}" = "0" ]; then
  isolation=(--no-isolation)
fi
rm -rf dist
"$PYTHON" -m build "${isolation[@]}" --outdir dist/ .
"$PYTHON" -m twine check --strict dist/*
"$PYTHON" scripts/check_dist.py dist/
