#!/usr/bin/env bash
# Benchmarks (not part of the test run): builds specd and llama-server from the pinned tree,
# generates the benchmark models, and runs a cell file (default: bench/speculation.json).
# Prints a table of tokens/s and ratios; writes bench/results/<name>.{md,svg,json}.
#   usage: scripts/bench.sh [CELLS.json] [--cells NAME,NAME] [--runs N] [--num-predict N] [--out DIR]
# The options go to bench/run.mjs; a smoke run, e.g.
#   scripts/bench.sh bench/speculation.json --cells bbox-medium --runs 1 --num-predict 64 --out /tmp/bench
# `scripts/bench.sh bench/loading.json`: plain decode with the weights read into memory and
# mapped from their file, for specd and llama-server each (bench/results/loading.md).
# `scripts/bench.sh bench/heads.json`: gemma4's assistant (a draft head) on the image cells and
# beside llama-server's draft-mtp (bench/results/heads.md); `scripts/bench.sh bench/eagle3.json`
# the same for an EAGLE3 head beside llama-server's draft-eagle3 (bench/results/eagle3.md);
# `scripts/bench.sh bench/mtp.json` a model's own MTP layer beside draft-mtp and
# `scripts/bench.sh bench/dflash.json` a DFlash head beside draft-dflash, free text only
# (bench/results/mtp.md, bench/results/dflash.md); `scripts/bench.sh bench/dflash-vision.json`
# the DFlash head on the image cells, specd only (bench/results/dflash-vision.md).
# `scripts/bench.sh grammar` instead times the grammar's operations per token on a 32k and a
# 151k vocabulary for the cell file's schemas (bench/results/grammar-cost.md).
# `scripts/bench.sh cache [--prefix-tokens N] [--runs N]` times the first token with a long
# shared prefix, cold and restored by the prompt cache, against llama-server's prompt cache,
# and a multi-turn chat's hit rate (bench/results/prompt-cache.md).
# `scripts/bench.sh concurrency [--streams N] [--num-predict N] [--runs N] [--rounds N] [--pairs A,B]`
# compares the aggregate tokens/s of concurrent streams with one stream, specd against
# llama-server --parallel N without a draft and at depths 3 and 8 (bench/results/concurrency.md);
# `scripts/bench.sh concurrency bench/eagle3.json --pairs e3_06,e3_09 --spec-type draft-eagle3
# --name concurrency-eagle3` the same with an EAGLE3 head (the cell file names the models to
# generate; --name the report's files); bench/heads.json --pairs g4head06,g4head09 --spec-type
# draft-mtp, bench/mtp.json --pairs mtp_06,mtp_09 --spec-type draft-mtp (a model's own MTP layer:
# no draft file) and bench/dflash.json --pairs dflash_06,dflash_09 --spec-type draft-dflash the
# other drafter kinds (bench/results/concurrency-{heads,mtp,dflash}.md). bench/waves.mjs (run
# directly) is the probe behind those reports' readings: one server kept up, a sequence of
# N-stream waves in the arms given (on, off, kN), tok/s and depth per wave.
# Every anchor runs as its users run it: llama-server built with upstream's default options
# (scripts/llama.sh server), the same thread count as the machine's CPUs, draft threads left
# at their default; specd with its own defaults (thread counts measured at load). Each report
# lists the exact command line of every engine.
# `scripts/bench.sh allocator --bins NAME=BIN,NAME=BIN [--runs N] [--num-predict N] [--threads N]
# [--target GGUF --draft GGUF] [--mmproj GGUF] [--one-at-a-time]` compares specd builds (e.g.
# one from before a change against build/bin/specd), interleaved (with --one-at-a-time each
# binary's server runs alone, started afresh for its turn: two servers up at once measured
# 1.15x-1.25x apart with the same binary in both): decode tokens/s on
# the fixture pair or the pair named, or with --mmproj the time of a request with one image
# (bench/results/allocator.md).
# `scripts/bench.sh scale-out [--runs N] [--num-predict N]`: the medium target split over two RPC
# workers against fully local, and 3 replicas behind HAProxy against one server, on loopback
# (bench/results/scale-out.md).
# `scripts/bench.sh runners [--pairs A,B] [--runs N] [--num-predict N]`: what running each model
# in a runner process costs per token against a runner thread, in CPU time of the server's
# threads (bench/results/runner-cost.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "${1:-}" = allocator ]; then
  shift
  bash scripts/setup.sh
  cmake --preset release >/dev/null
  cmake --build --preset release --target specd specd-testmodel
  bash tests/make-fixtures.sh build/bin/specd-testmodel "$(bash scripts/llama.sh source)/models" build/fixtures
  exec node bench/allocator.mjs --fixtures build/fixtures --out bench/results "$@"
fi
if [ "${1:-}" = grammar ]; then
  bash scripts/setup.sh
  cmake --preset release >/dev/null
  cmake --build --preset release --target specd-grammar-cost
  exec node bench/grammar_cost.mjs bench/speculation.json bench/grammar-answers.json \
    --tool build/bin/specd-grammar-cost --models "$(bash scripts/llama.sh source)/models" --out bench/results
fi
mode=cells
if [ "${1:-}" = cache ]; then mode=cache; shift; fi
if [ "${1:-}" = concurrency ]; then mode=concurrency; shift; fi
if [ "${1:-}" = coupling ]; then mode=coupling; shift; fi
if [ "${1:-}" = runners ]; then mode=runners; shift; fi
if [ "${1:-}" = scale-out ]; then mode=scale-out; shift; fi
cells=bench/speculation.json
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then cells=$1; shift; fi

bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target specd specd-testmodel
models_src="$(bash scripts/llama.sh source)/models"
models_dir="${SPECD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/specd}/bench-models"
bash bench/make-models.sh "$cells" build/bin/specd-testmodel "$models_src" "$models_dir"
if [ "$mode" = scale-out ]; then # specd against itself: workers, replicas, one server
  exec node bench/scale_out.mjs --specd build/bin/specd --models "$models_dir" --out bench/results "$@"
fi
if [ "$mode" = runners ]; then # specd against itself
  exec node bench/runner_cost.mjs --specd build/bin/specd --models "$models_dir" --out bench/results "$@"
fi
if [ "$mode" = coupling ]; then # specd alone: no llama-server to build
  cmake --build --preset release --target specd-sample-cost
  build/bin/specd-sample-cost > bench/results/sample-cost.json
  exec node bench/coupling.mjs --specd build/bin/specd --models "$models_dir" --out bench/results "$@"
fi
llama_server="$(bash scripts/llama.sh server)"
if [ "$mode" = concurrency ]; then
  exec node bench/concurrency.mjs --specd build/bin/specd --llama-server "$llama_server" \
    --models "$models_dir" --out bench/results --cells "$cells" "$@"
fi
if [ "$mode" = cache ]; then
  exec node bench/prompt_cache.mjs --specd build/bin/specd --llama-server "$llama_server" \
    --models "$models_dir" --out bench/results "$@"
fi
node bench/run.mjs "$cells" --specd build/bin/specd --llama-server "$llama_server" \
  --models "$models_dir" --out bench/results "$@"
