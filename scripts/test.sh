#!/usr/bin/env bash
# README command 2: set up, build, and run every test (unit, integration, end-to-end).
# Benchmarks and soaks are separate commands and not part of this run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
cmake --preset release
cmake --build --preset release
(cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
ctest --preset release --timeout 900
