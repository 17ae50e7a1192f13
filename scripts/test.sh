#!/usr/bin/env bash
# The whole check: lint, format, types, tests. Expects .venv with `pip install -e ".[test]"`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
$PY -m ruff check .
$PY -m ruff format --check .
$PY -m mypy
# Test processes: one more than the CPUs (most slow tests wait on the processes they start);
# REASONIX_TEST_WORKERS=0 runs them in this process, and a -n of your own wins over this one.
WORKERS=${REASONIX_TEST_WORKERS:-$(( $(nproc 2>/dev/null || echo 2) + 1 ))}
$PY -m pytest -q -n "$WORKERS" "$@"
