#!/usr/bin/env bash
# The pinned llama.cpp's CPU library holds no AMX code where scripts/llama.sh built it without
# (the "-noamx" key: GCC before 13 on x86-64, docs/gpu.md): a compiler flag that stopped
# taking effect (ggml's -march=native placed after it, say) would bring back the kernels that
# fault in their first tile configuration on a Xeon with AMX.
#   ggml_amx.sh PREFIX
set -euo pipefail
prefix="$1"
config="$(head -n 1 "$prefix/CONFIG")"
lib="$prefix/lib/libggml-cpu.a"
case "$config" in
  *-noamx)
    n="$(objdump -d "$lib" | grep -c -E '\s(ldtilecfg|tileloadd|tdpbssd)\s' || true)"
    if [ "$n" != 0 ]; then
      echo "$lib ($config) holds $n AMX tile instructions" >&2
      exit 1
    fi
    echo "$config: no AMX tile instructions in libggml-cpu.a" ;;
  *)
    echo "$config: built with AMX where the machine has it (not a -noamx build)" ;;
esac
