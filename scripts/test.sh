#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what it needs, then lint, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
.venv/bin/ruff check .
.venv/bin/mypy
# what a user installs: the wheel in a fresh venv outside the checkout, one lab capture
scripts/test_wheel.sh
# three workers: most of the suite's time is spent waiting on the lab (py-spy dumps spanning
# 10 s, /metrics samples, Prometheus); each lab module stays on one worker, in its order
# (tests/conftest.py). Where the time went: test-results/durations.txt.
.venv/bin/python -m pytest -q -p no:cacheprovider -n "${PDFX_TEST_WORKERS:-3}" --dist loadfile --no-loadscope-reorder \
  --durations=25 --durations-file test-results/durations.txt "$@"
