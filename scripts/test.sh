#!/usr/bin/env bash
# README command 2: set up, build, and run every test (unit, integration, end-to-end).
# Benchmarks and soaks are separate commands and not part of this run.
#   usage: scripts/test.sh [PRESET]   PRESET: release (default), asan, debug or tsan
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
preset=${1:-release}
case "$preset" in
  release|asan|debug|tsan) ;;
  *) echo "scripts/test.sh: unknown preset '$preset' (release, asan, debug, tsan)" >&2; exit 2 ;;
esac

# chromium: the dashboard's browser test (tests/e2e/dashboard.test.mjs, release preset only).
bash scripts/setup.sh chromium
cmake --preset "$preset"
cmake --build --preset "$preset"
(cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
ctest --preset "$preset" --timeout 900
