#!/usr/bin/env bash
# What scripts/llama.sh leaves out of the pinned llama.cpp's CPU library on x86-64 is not in it:
# a compiler flag that stopped taking effect (ggml's -march=native placed after it, say) would
# bring it back (docs/gpu.md).
#   "-noamx" (GCC before 13): no AMX tile instructions, whose tile configuration GCC 12 drops
#            in part, so that they fault on a Xeon with AMX.
#   "-nofp16": no AVX512-FP16 arithmetic, with which ggml sums f16 dot products in half
#            precision.
#   ggml_amx.sh PREFIX
set -euo pipefail
prefix="$1"
config="$(head -n 1 "$prefix/CONFIG")"
lib="$prefix/lib/libggml-cpu.a"
code="$(objdump -d "$lib")"
check() { # name, pattern
  local n
  n="$(grep -c -E "$2" <<<"$code" || true)"
  if [ "$n" != 0 ]; then
    echo "$lib ($config) holds $n $1 instructions" >&2
    exit 1
  fi
  echo "$config: no $1 instructions in libggml-cpu.a"
}
case "$config" in *-noamx*) check "AMX tile" '\s(ldtilecfg|tileloadd|tdpbssd)\s' ;; esac
case "$config" in *-nofp16*) check "AVX512-FP16 arithmetic" '\sv(f[n]?m(add|sub)[0-9]+|add|sub|mul|div)[ps]h\s' ;; esac
case "$config" in *-noamx*|*-nofp16*) ;; *) echo "$config: built with what the machine has" ;; esac
