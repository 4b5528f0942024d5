#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`: clang, address + undefined sanitizers) and runs
# each for SECONDS (default 60). Inputs that crash, hang or run out of memory are copied to
# fuzz/crashes/<target>-<kind>-<hash>; the script exits non-zero if there is any.
# Not part of scripts/test.sh or CI. See docs/fuzz.md.
#   usage: scripts/fuzz.sh [SECONDS] [TARGET...]   TARGET: request schema modelfile model_name output image go_template
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds=${1:-60}
shift || true
case "$seconds" in
  ''|*[!0-9]*) echo "scripts/fuzz.sh: SECONDS must be a whole number, got '$seconds'" >&2; exit 2 ;;
esac

# clang and libFuzzer (libclang-rt-14-dev) besides the usual packages, only when missing.
bash scripts/setup.sh clang-14 libclang-rt-14-dev

cmake --preset fuzz
cmake --build --preset fuzz

# The schema target loads llama.cpp's grammar for every grammar it compiles: it needs a vocab.
prefix="$(bash scripts/llama.sh build)"
export SPECD_FUZZ_VOCAB="$prefix/models/ggml-vocab-phi-3.gguf"
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(request schema modelfile model_name output image go_template)

work=build-fuzz/run
mkdir -p fuzz/crashes
found=0
for t in "${targets[@]}"; do
  bin="build-fuzz/bin/fuzz-$t"
  [ -x "$bin" ] || { echo "scripts/fuzz.sh: no target '$t' ($bin)" >&2; exit 2; }
  # New inputs go to the work corpus; fuzz/corpus/<target> holds the seeds and is only read.
  mkdir -p "$work/corpus/$t" "$work/artifacts/$t"
  rm -f "$work/artifacts/$t"/*
  dict=()
  [ -f "fuzz/dict/$t.dict" ] && dict=("-dict=fuzz/dict/$t.dict")
  echo "[fuzz] $t for ${seconds}s (log: $work/$t.log)" >&2
  rc=0
  "$bin" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/$t/" "${dict[@]}" \
    "$work/corpus/$t" "fuzz/corpus/$t" > "$work/$t.log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$t.log" | tail -1)
  echo "[fuzz] $t: ${runs:-?} runs, ${rate:-?} exec/s, exit $rc" >&2
  for a in "$work/artifacts/$t"/*; do
    [ -f "$a" ] || continue
    cp "$a" "fuzz/crashes/$t-$(basename "$a")"
    echo "[fuzz] $t: finding fuzz/crashes/$t-$(basename "$a")" >&2
    found=1
  done
  if [ "$rc" -ne 0 ]; then
    found=1
    grep -m1 -B2 -A30 -E '^==[0-9]+==ERROR|runtime error|deadly signal|terminate called|fuzz-[a-z_]+:' "$work/$t.log" >&2 || tail -40 "$work/$t.log" >&2
  fi
done

if [ "$found" -ne 0 ]; then
  echo "[fuzz] findings: see fuzz/crashes/ and $work/*.log; reproduce with build-fuzz/bin/fuzz-TARGET FILE" >&2
  exit 1
fi
echo "[fuzz] no findings" >&2
