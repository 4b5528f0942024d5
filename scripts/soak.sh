#!/usr/bin/env bash
# The memory soaks (not part of the test run): builds specd and the test fixtures, then runs
# one profile against the real server, prompt cache on and off.
#   mix (default)  tests/e2e/soak.mjs: 300 requests of a mixed workload, checking the ledger
#                  after every request and the growth of resident memory.
#                  [--requests N] [--window W] [--limit-mib X] [--concurrency C] [--json FILE]
#   shapes         tests/e2e/soak_shapes.mjs: 240 /api/chat requests to a vision model with a
#                  draft, each with an image of the next of 60 sizes (96x80 .. 1450x1080),
#                  stop-terminated answers every other request; RSS minus the prompt cache at
#                  checkpoints and its slope over the second half.
#                  [--requests N] [--shapes S] [--checkpoint C] [--limit-mib X] [--runs off,on] [--json FILE]
#   usage: scripts/soak.sh [--profile mix|shapes] [OPTIONS of that profile]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
profile=mix
args=()
while [ $# -gt 0 ]; do
  if [ "$1" = --profile ] && [ $# -ge 2 ]; then
    profile=$2
    shift 2
  else
    args+=("$1")
    shift
  fi
done
case "$profile" in
  mix) script=tests/e2e/soak.mjs ;;
  shapes) script=tests/e2e/soak_shapes.mjs ;;
  *) echo "scripts/soak.sh: unknown profile '$profile' (mix, shapes)" >&2; exit 2 ;;
esac
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target specd specd-testmodel
bash tests/make-fixtures.sh build/bin/specd-testmodel "$(bash scripts/llama.sh source)/models" build/fixtures
(cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
SPECD_BIN=build/bin/specd SPECD_FIXTURES=build/fixtures node "$script" "${args[@]}"
