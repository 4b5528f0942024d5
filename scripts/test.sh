#!/usr/bin/env bash
# README command 2: set up, build, and run every test (unit, integration, end-to-end).
# Benchmarks and soaks are separate commands and not part of this run.
#   usage: scripts/test.sh [PRESET]   PRESET: release (default), asan, debug, tsan, or a GPU
#   build's: vulkan, cuda (build-vulkan/, build-cuda/: the tests labelled gpu, on that build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
preset=${1:-release}
case "$preset" in
  release|asan|debug|tsan)
    # chromium: the dashboard's browser test (tests/e2e/dashboard.test.mjs, release preset only).
    bash scripts/setup.sh chromium ;;
  vulkan|cuda)
    # Without a GPU, vulkan runs on Mesa's lavapipe (mesa-vulkan-drivers), which setup installs.
    SPECD_GPU=$preset bash scripts/setup.sh ;;
  *) echo "scripts/test.sh: unknown preset '$preset' (release, asan, debug, tsan, vulkan, cuda)" >&2; exit 2 ;;
esac

cmake --preset "$preset"
cmake --build --preset "$preset"
(cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
ctest --preset "$preset" --timeout 900
