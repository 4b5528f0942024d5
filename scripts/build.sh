#!/usr/bin/env bash
# Builds specd with one of ggml's GPU backends beside the CPU, each in a folder of its own so
# the others stay as they are (README "GPU builds"):
#   scripts/build.sh [cpu|vulkan|cuda|metal]     default: $SPECD_GPU, else cpu
#     cpu     build/bin/specd          (preset release)
#     vulkan  build-vulkan/bin/specd   (preset vulkan; Debian's Vulkan packages are installed)
#     cuda    build-cuda/bin/specd     (preset cuda; nvcc from CUDA_HOME or PATH;
#                                       CMAKE_CUDA_ARCHITECTURES, default 86)
#     metal   build-metal/bin/specd    (preset metal; macOS only, not built on Linux)
# The pinned llama.cpp is built once per variant into its cache (scripts/llama.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
gpu="${1:-${SPECD_GPU:-cpu}}"
case "$gpu" in
  cpu) preset=release ;;
  vulkan|cuda) preset=$gpu ;;
  metal)
    if [ "$(uname -s)" != Darwin ]; then
      echo "scripts/build.sh: the metal build needs macOS (Xcode's Metal and Accelerate frameworks)" >&2
      exit 2
    fi
    preset=metal ;;
  *) echo "scripts/build.sh: unknown GPU backend '$gpu' (cpu, vulkan, cuda, metal)" >&2; exit 2 ;;
esac
if [ "$gpu" = cuda ] && ! command -v nvcc >/dev/null && [ ! -x "${CUDA_HOME:-/nonexistent}/bin/nvcc" ]; then
  echo "scripts/build.sh: the cuda build needs the CUDA toolkit (nvcc on PATH or under CUDA_HOME)" >&2
  exit 2
fi
if [ "$(uname -s)" = Linux ]; then SPECD_GPU=$gpu bash scripts/setup.sh; fi
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
case "$preset" in release) dir=build ;; *) dir=build-$preset ;; esac
echo "$dir/bin/specd"
