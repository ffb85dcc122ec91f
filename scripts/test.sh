#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what it needs, then lint, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
.venv/bin/ruff check .
.venv/bin/mypy
# what a user installs: the wheel in a fresh venv outside the checkout, one lab capture
scripts/test_wheel.sh
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "$@"
