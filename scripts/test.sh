#!/usr/bin/env bash
# The whole check: lint, format, types, tests. Expects .venv with `pip install -e ".[test]"`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
$PY -m ruff check .
$PY -m ruff format --check .
$PY -m mypy
$PY -m pytest -q "$@"
