#!/usr/bin/env bash
# The memory soak (not part of the test run): builds specd and the test fixtures, then runs
# tests/e2e/soak.mjs: 300 requests against one server with the prompt cache on, then off,
# checking the ledger after every request and the growth of resident memory.
#   usage: scripts/soak.sh [--requests N] [--window W] [--limit-mib X] [--concurrency C] [--json FILE]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target specd specd-testmodel
bash tests/make-fixtures.sh build/bin/specd-testmodel "$(bash scripts/llama.sh source)/models" build/fixtures
(cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
SPECD_BIN=build/bin/specd SPECD_FIXTURES=build/fixtures node tests/e2e/soak.mjs "$@"
