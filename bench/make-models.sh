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
vocab="$vocab_dir/$(q s.shape.vocab)"
# A pair may override the shape's extra_layers and quantize its draft ("draft_type": "q4_0"),
# so that its draft costs a few percent of the target's step, as real drafts do.
for pair in $(q "Object.keys(s.pairs).join(' ')"); do
  agreement=$(q "s.pairs['$pair'].agreement")
  seed=$(q "s.pairs['$pair'].seed")
  extra=$(q "s.pairs['$pair'].extra_layers ?? s.shape.extra_layers")
  shape="--n-embd $(q s.shape.n_embd) --n-ff $(q s.shape.n_ff) --n-head $(q s.shape.n_head) --n-layer $(q s.shape.draft_layers) --extra-layers $extra"
  draft_type=$(q "s.pairs['$pair'].draft_type ?? ''")
  [ -z "$draft_type" ] || shape="$shape --draft-type $draft_type"
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
# A vision projector for the pairs' width, when the cell file asks for one ("projector").
if [ "$(q "s.projector ? 'yes' : 'no'")" = yes ]; then
  args="projector --type gemma3 --n-embd-text $(q s.shape.n_embd) --image-size $(q s.projector.image_size) --patch-size $(q s.projector.patch_size) --merge $(q s.projector.merge) --n-embd $(q s.projector.n_embd) --n-layer $(q s.projector.n_layer) --n-ff $(q s.projector.n_ff) --out $out/mmproj.gguf"
  stamp="$out/.mmproj.stamp"
  if [ -f "$out/mmproj.gguf" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$tool_sum $args" ]; then
    echo "bench models: mmproj is up to date" >&2
  else
    echo "bench models: generating the projector" >&2
    # shellcheck disable=SC2086
    "$bin" $args >&2
    echo "$tool_sum $args" > "$stamp"
  fi
fi
