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
# Runs specd-testmodel with ARGS unless FILE exists and STAMP holds the same tool checksum and
# arguments.
generate() { # LABEL FILE STAMP ARGS
  local label=$1 file=$2 stamp=$3 args=$4
  if [ -f "$file" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$tool_sum $args" ]; then
    echo "bench models: $label is up to date" >&2
    return
  fi
  echo "bench models: generating $label" >&2
  # shellcheck disable=SC2086
  "$bin" $args >&2
  echo "$tool_sum $args" > "$stamp"
}
# A pair may override the shape's extra_layers and draft_layers, quantize its draft
# ("draft_type": "q4_0", so that its draft costs a few percent of the target's step, as real
# drafts do), and name another architecture ("arch": "gemma4" or "qwen2vl"), vocabulary and
# chat template (a file under the vocabulary folder's templates/). A pair with "assistant": true
# is a gemma4 target and its gemma4-assistant head instead (specd-testmodel assistant); one with
# "eagle3": true a llama target and an EAGLE3 head for it (specd-testmodel eagle3), one with
# "dflash": true a DFlash head (specd-testmodel dflash); one with "mtp": true a glm4moe target
# with an MTP layer of its own and no draft file (specd-testmodel mtp).
for pair in $(q "Object.keys(s.pairs).join(' ')"); do
  agreement=$(q "s.pairs['$pair'].agreement")
  seed=$(q "s.pairs['$pair'].seed")
  extra=$(q "s.pairs['$pair'].extra_layers ?? s.shape.extra_layers")
  layers=$(q "s.pairs['$pair'].draft_layers ?? s.shape.draft_layers")
  shape="--n-embd $(q s.shape.n_embd) --n-ff $(q s.shape.n_ff) --n-head $(q s.shape.n_head) --n-layer $layers --extra-layers $extra"
  draft_type=$(q "s.pairs['$pair'].draft_type ?? ''")
  [ -z "$draft_type" ] || shape="$shape --draft-type $draft_type"
  arch=$(q "s.pairs['$pair'].arch ?? ''")
  [ -z "$arch" ] || shape="$shape --arch $arch"
  pair_vocab="$vocab_dir/$(q "s.pairs['$pair'].vocab ?? s.shape.vocab")"
  template=$(q "s.pairs['$pair'].chat_template ?? ''")
  [ -z "$template" ] || shape="$shape --chat-template $vocab_dir/templates/$template"
  if [ "$(q "s.pairs['$pair'].assistant ? 'yes' : 'no'")" = yes ]; then
    # A gemma4 target of "layers" layers and a gemma4-assistant head for it (written as the
    # pair's draft), the target's layers scaled until the head agrees on `agreement`.
    # "draft_type" quantizes the head alone; "output_dims" makes the target's output read only
    # that many dimensions and the head that much (plus 32) wide.
    layers=$(q "s.pairs['$pair'].layers")
    head_args=""
    [ -z "$draft_type" ] || head_args=" --draft-type $draft_type"
    dims=$(q "s.pairs['$pair'].output_dims ?? ''")
    [ -z "$dims" ] || head_args="$head_args --output-dims $dims"
    generate "$pair (assistant, agreement $agreement)" "$out/$pair-target.gguf" "$out/.$pair.stamp" \
      "assistant --vocab $pair_vocab --target $out/$pair-target.gguf --out $out/$pair-draft.gguf --agreement $agreement --seed $seed --n-embd $(q s.shape.n_embd) --n-ff $(q s.shape.n_ff) --n-head $(q s.shape.n_head) --n-layer $layers$head_args"
    continue
  fi
  if [ "$(q "s.pairs['$pair'].dflash ? 'yes' : 'no'")" = yes ]; then
    layers=$(q "s.pairs['$pair'].layers")
    generate "$pair (dflash, agreement $agreement)" "$out/$pair-target.gguf" "$out/.$pair.stamp" \
      "dflash --vocab $pair_vocab --target $out/$pair-target.gguf --out $out/$pair-draft.gguf --agreement $agreement --seed $seed --n-embd $(q s.shape.n_embd) --n-ff $(q s.shape.n_ff) --n-head $(q s.shape.n_head) --n-layer $layers"
    continue
  fi
  if [ "$(q "s.pairs['$pair'].mtp ? 'yes' : 'no'")" = yes ]; then
    layers=$(q "s.pairs['$pair'].layers")
    generate "$pair (mtp, agreement $agreement)" "$out/$pair-target.gguf" "$out/.$pair.stamp" \
      "mtp --vocab $pair_vocab --out $out/$pair-target.gguf --agreement $agreement --seed $seed --n-embd $(q s.shape.n_embd) --n-ff $(q s.shape.n_ff) --n-head $(q s.shape.n_head) --n-layer $layers"
    continue
  fi
  if [ "$(q "s.pairs['$pair'].eagle3 ? 'yes' : 'no'")" = yes ]; then
    # A llama target of "layers" layers and an EAGLE3 head for it (written as the pair's
    # draft), the target's layers scaled until the head agrees on `agreement`.
    layers=$(q "s.pairs['$pair'].layers")
    generate "$pair (eagle3, agreement $agreement)" "$out/$pair-target.gguf" "$out/.$pair.stamp" \
      "eagle3 --vocab $pair_vocab --target $out/$pair-target.gguf --out $out/$pair-draft.gguf --agreement $agreement --seed $seed --n-embd $(q s.shape.n_embd) --n-ff $(q s.shape.n_ff) --n-head $(q s.shape.n_head) --n-layer $layers"
    continue
  fi
  generate "$pair (agreement $agreement)" "$out/$pair-target.gguf" "$out/.$pair.stamp" \
    "pair --vocab $pair_vocab --target $out/$pair-target.gguf --draft $out/$pair-draft.gguf --agreement $agreement --seed $seed $shape"
done
# Vision projectors for the pairs' width, when the cell file asks for them: "projector"
# (gemma3, mmproj.gguf) for every pair without one of its own, a pair's "projector" (its
# "type" and the same size keys, PAIR-mmproj.gguf) for that pair.
projector() { # KEY-EXPRESSION OUT-FILE
  local p=$1 file=$2 args
  args="projector --type $(q "$p.type ?? 'gemma3'") --n-embd-text $(q s.shape.n_embd)"
  for key in image_size patch_size merge; do
    [ "$(q "$p.$key ?? ''")" = "" ] || args="$args --${key//_/-} $(q "$p.$key")"
  done
  args="$args --n-embd $(q "$p.n_embd") --n-layer $(q "$p.n_layer") --n-ff $(q "$p.n_ff") --out $out/$file"
  generate "$file" "$out/$file" "$out/.$file.stamp" "$args"
}
[ "$(q "s.projector ? 'yes' : 'no'")" = no ] || projector s.projector mmproj.gguf
for pair in $(q "Object.keys(s.pairs).filter((p) => s.pairs[p].projector).join(' ')"); do
  projector "s.pairs['$pair'].projector" "$pair-mmproj.gguf"
done
