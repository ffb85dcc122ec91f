#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what it needs, then lint, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "$@"
