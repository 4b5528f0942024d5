#!/usr/bin/env bash
# specd-testmodel's pair mode for an architecture other than llama (gemma4): the target's added
# layers are scaled through their post norms, so at alpha 0 they add nothing (the pair agrees
# everywhere) and at alpha 1 they change most choices. The llama pairs are checked through
# their fixtures (tests/integration/test_testmodel.cpp).
#   usage: testmodel_pair.sh TESTMODEL_BIN LLAMA_MODELS_DIR
set -euo pipefail
bin=$1
vocab=$2/ggml-vocab-gemma-4.gguf
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
agreement() {
  "$bin" pair --arch gemma4 --vocab "$vocab" --n-embd 32 --n-head 2 --n-ff 64 --seed 9 --alpha "$1" \
    --draft "$dir/d.gguf" --target "$dir/t.gguf" | sed -n 's/^agreement \([0-9.]*\).*/\1/p'
}
at0=$(agreement 0)
at1=$(agreement 1)
echo "gemma4 pair: agreement $at0 at alpha 0, $at1 at alpha 1"
awk -v a="$at0" -v b="$at1" 'BEGIN { exit !(a == 1 && b < 0.9) }' || {
  echo "testmodel_pair: expected agreement 1 at alpha 0 and below 0.9 at alpha 1" >&2
  exit 1
}
