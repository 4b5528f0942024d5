#!/usr/bin/env bash
# Generates the benchmark's target/draft pairs described by a cell file's "shape" and
# "pairs" (bigger than the test fixtures, so that a draft is much cheaper than its target).
#   usage: bench/make-models.sh CELLS.json TESTMODEL_BIN LLAMA_MODELS_DIR OUT_DIR
# Idempotent: a pair is regenerated only when its stamp (tool checksum + arguments) changes.
set -euo pipefail
cells=$1 bin=$2 vocab_dir=$3 out=$4
mkdir -p "$out"
tool_sum=$(sha256sum "$bin" | cut -d' ' -f1)
q() { node -e "const s=require(process.argv[1]); console.log($1)" "$(realpath "$cells")"; }
shape="--n-embd $(q s.shape.n_embd) --n-ff $(q s.shape.n_ff) --n-head $(q s.shape.n_head) --n-layer $(q s.shape.draft_layers) --extra-layers $(q s.shape.extra_layers)"
vocab="$vocab_dir/$(q s.shape.vocab)"
for pair in $(q "Object.keys(s.pairs).join(' ')"); do
  agreement=$(q "s.pairs['$pair'].agreement")
  seed=$(q "s.pairs['$pair'].seed")
  args="pair --vocab $vocab --target $out/$pair-target.gguf --draft $out/$pair-draft.gguf --agreement $agreement --seed $seed $shape"
  stamp="$out/.$pair.stamp"
  if [ -f "$out/$pair-target.gguf" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$tool_sum $args" ]; then
    echo "bench models: $pair is up to date" >&2
    continue
  fi
  echo "bench models: generating $pair (agreement $agreement)" >&2
  # shellcheck disable=SC2086
  "$bin" $args >&2
  echo "$tool_sum $args" > "$stamp"
done
