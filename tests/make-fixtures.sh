#!/usr/bin/env bash
# Generates the tiny random-weight test models with specd-testmodel (tools/testmodel).
#   usage: make-fixtures.sh TESTMODEL_BIN LLAMA_MODELS_DIR OUT_DIR
#
# Idempotent: each fixture has a stamp holding the tool's checksum and its exact arguments,
# and is regenerated only when that changes or a file is missing. Every run also checks that
# the tool is deterministic (same arguments, same bytes), since tests compare outputs of
# these models across runs: tiny.gguf and the two projectors always, the 0.8 pair (whose
# calibration runs libllama several times) when it was just generated.
# A target's output rows for its vocab's end-of-generation tokens are zero (specd-testmodel):
# its answers end only at num_predict, a stop string or a grammar, never by themselves.
#
#   tiny.gguf                       phi-3 vocab (32064 tokens, has a chat template); the main model
#   tiny-spm.gguf                   llama-spm vocab (32000 tokens, no chat template)
#   tiny-longctx.gguf               tiny.gguf trained (by its header) for 2^24 tokens of context
#   deep.gguf                       8 wide layers (f16) that outweigh its embeddings and output:
#                                   partial GPU offload by memory (tests/e2e/gpu_offload)
#   pair-draft.gguf, pair-target.gguf
#                                   phi-3 vocab; greedy choices agree on ~80% of positions
#   pair-low-draft.gguf, pair-low-target.gguf
#                                   the same with ~30% agreement (speculation that does not pay)
#   pair-wide-heads-draft.gguf, pair-wide-heads-target.gguf
#                                   ~80% agreement with 1 head of 64 values (the others have 16):
#                                   what a q8_0 or q4_0 KV cache needs (engine/kv_cache_type.h)
#   think.gguf                      qwen2 vocab (151936 tokens) with Qwen3's chat template from
#                                   models/templates: it reasons (<think>) and calls tools
#   vision-text.gguf, vision-mmproj.gguf
#                                   phi-3 vocab llama model (n_embd 64) and a gemma3 vision
#                                   projector for it: every image is 16 tokens (64x64 pixels,
#                                   4x4 patches pooled 4x4). mtmd only needs the text model's
#                                   n_embd to match; the image markers are plain text here.
#   gemma4-text.gguf, gemma4-mmproj.gguf
#                                   a gemma4 text model (gemma-4 vocab, 262144 tokens, and its
#                                   chat template; n_embd 64, two sliding-window layers and a
#                                   full one; Q8_0) and a gemma4v projector for it with the real
#                                   patch size and pool: 70-1120 tokens per image by its size,
#                                   e.g. 81 for 64x64, as the real model gives; <|image> and
#                                   <image|> around each image are the vocabulary's own tokens
#   gemma4-draft.gguf               gemma4-text.gguf's weights in Q4_0: a draft for it that
#                                   agrees on most tokens, not all
#   gemma4-head-target.gguf, gemma4-assistant.gguf
#                                   a gemma4 target (as gemma4-text.gguf, every layer scaled by
#                                   alpha 0.0254) and a gemma4-assistant head for it (an MTP
#                                   drafter reading the target's hidden state and KV cache):
#                                   the head chooses what the target does on ~80% of positions
#                                   (specd-testmodel assistant); gemma4-mmproj.gguf fits the target
#   gemma4-narrow-target.gguf, gemma4-narrow-assistant.gguf
#                                   a gemma4 target of width 128 whose output reads its first 64
#                                   dimensions, and an assistant 96 wide for it (narrower than its
#                                   target, as real ones are), at alpha 0: the head chooses what
#                                   the target does (specd-testmodel assistant --output-dims)
#   eagle3-target.gguf, eagle3-head.gguf
#                                   a llama target (phi-3 vocab, n_embd 64, 4 layers, each scaled
#                                   by alpha 0.0586) and an EAGLE3 head for it (one decoder layer
#                                   with its own KV cache, fed the inputs of the target's layers
#                                   0, 2 and 3): the head chooses what the target does on ~80% of
#                                   positions (specd-testmodel eagle3)
#   eagle3-uniform-head.gguf        the same head with attention over every position alike
#                                   (--attention uniform): tests of how its cache is fed
#   dflash-target.gguf, dflash-head.gguf
#                                   a llama target (phi-3 vocab, n_embd 64, 4 layers, each scaled
#                                   by alpha 0.0592, its output reading 48 of the 64 dimensions)
#                                   and a DFlash head for it (one layer with its own cache of the
#                                   encoded inputs of the target's layers 0, 2 and 3; a block of
#                                   masks drafted in one decode): its first drafted token is what
#                                   the target chooses on ~80% of positions, the later ones are
#                                   guesses (specd-testmodel dflash)
#   mtp.gguf                        a glm4moe model (phi-3 vocab, n_embd 64, 4 dense layers, each
#                                   scaled by alpha 0.0527) that carries one MTP layer (a nextn
#                                   layer with a cache of its own, two experts and a shared one):
#                                   the layer chooses what the model does on ~80% of positions
#                                   (specd-testmodel mtp)
#   qwen-vl-text.gguf, qwen-vl-mmproj.gguf
#                                   a qwen2vl text model (qwen2 vocab, Qwen2.5's chat template,
#                                   n_embd 64, M-RoPE; Q8_0) and a Qwen2.5-VL merger projector for
#                                   it (patch 14, 2x2 merge: 9 tokens for 64x64, 2691 for
#                                   1920x1080, on a grid of M-RoPE positions: an image takes
#                                   max(grid width, grid height) positions, 3 for those 9 tokens)
#   qwen-vl-draft.gguf              qwen-vl-text.gguf's weights in Q4_0: its draft
#   qwen2-vl-mmproj.gguf            a Qwen2-VL merger projector for qwen-vl-text.gguf (LayerNorms,
#                                   no window attention; the same token counts and positions)
#   broken-mmproj.gguf              a gemma3 projector for vision-text.gguf that loads but aborts
#                                   its process on the first image (specd-testmodel --defect)
#   tiny-lora.gguf                  a random LoRA adapter for tiny.gguf (every attention and
#                                   feed-forward matrix, rank 8): changes its greedy answers
#   small-lora.gguf                 the same for an n_embd 32 model: does not fit tiny.gguf
#   vocab-bert-bge.gguf, vocab-starcoder.gguf
#                                   llama.cpp's vocab-only files, copied: an embedding model
#                                   (BERT, non-causal) and a vocabulary with FIM tokens
set -euo pipefail

if [ $# -ne 3 ]; then
  echo "usage: $0 TESTMODEL_BIN LLAMA_MODELS_DIR OUT_DIR" >&2
  exit 2
fi
bin=$1
models=$2
out=$3

for f in "$bin" "$models/ggml-vocab-phi-3.gguf" "$models/ggml-vocab-llama-spm.gguf" \
         "$models/ggml-vocab-qwen2.gguf" "$models/ggml-vocab-gemma-4.gguf" "$models/templates/Qwen-Qwen3-0.6B.jinja" \
         "$models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"; do
  if [ ! -f "$f" ]; then
    echo "make-fixtures: missing $f" >&2
    exit 1
  fi
done
mkdir -p "$out"
# Absolute paths, so the stamps do not depend on how the caller spelled them.
out=$(cd "$out" && pwd)
models=$(cd "$models" && pwd)
tool_sum=$(sha256sum "$bin" | cut -d' ' -f1)
generated=" "

# fixture NAME "OUTPUT..." ARG...: runs the tool with ARGs unless NAME's stamp is current.
fixture() {
  local name=$1 outputs=$2
  shift 2
  local stamp="$out/.$name.stamp"
  local want="$tool_sum $*"
  local missing=0 f
  for f in $outputs; do
    [ -f "$out/$f" ] || missing=1
  done
  if [ "$missing" = 0 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "make-fixtures: $name is up to date"
    return
  fi
  rm -f "$stamp"
  local start=$SECONDS
  "$bin" "$@"
  echo "make-fixtures: $name generated in $((SECONDS - start))s"
  printf '%s' "$want" > "$stamp"
  generated+="$name "
}

phi3="$models/ggml-vocab-phi-3.gguf"
spm="$models/ggml-vocab-llama-spm.gguf"

fixture tiny "tiny.gguf" --vocab "$phi3" --out "$out/tiny.gguf" --seed 1
fixture tiny-spm "tiny-spm.gguf" --vocab "$spm" --out "$out/tiny-spm.gguf" --seed 1
fixture tiny-longctx "tiny-longctx.gguf" --vocab "$phi3" --out "$out/tiny-longctx.gguf" --seed 1 --n-ctx-train 16777216
fixture deep "deep.gguf" --vocab "$phi3" --out "$out/deep.gguf" --seed 4 --n-embd 128 --n-ff 2048 --n-layer 8 --quantize f16
pair_args=(pair --vocab "$phi3" --agreement 0.8 --seed 2)
fixture pair "pair-draft.gguf pair-target.gguf" \
  "${pair_args[@]}" --draft "$out/pair-draft.gguf" --target "$out/pair-target.gguf"
fixture pair-low "pair-low-draft.gguf pair-low-target.gguf" \
  pair --vocab "$phi3" --agreement 0.3 --seed 3 \
  --draft "$out/pair-low-draft.gguf" --target "$out/pair-low-target.gguf"
# A head of 64 values (n_embd 64, 1 head): what a q8_0 or q4_0 KV cache needs.
fixture pair-wide-heads "pair-wide-heads-draft.gguf pair-wide-heads-target.gguf" \
  pair --vocab "$phi3" --agreement 0.8 --seed 9 --n-head 1 \
  --draft "$out/pair-wide-heads-draft.gguf" --target "$out/pair-wide-heads-target.gguf"
fixture think "think.gguf" --vocab "$models/ggml-vocab-qwen2.gguf" \
  --chat-template "$models/templates/Qwen-Qwen3-0.6B.jinja" --out "$out/think.gguf" --seed 5
fixture vision-text "vision-text.gguf" --vocab "$phi3" --out "$out/vision-text.gguf" --seed 4
mmproj_args=(projector --type gemma3 --n-embd-text 64 --seed 4)
fixture vision-mmproj "vision-mmproj.gguf" "${mmproj_args[@]}" --out "$out/vision-mmproj.gguf"
fixture broken-mmproj "broken-mmproj.gguf" "${mmproj_args[@]}" --defect norm --out "$out/broken-mmproj.gguf"
fixture gemma4-text "gemma4-text.gguf" --arch gemma4 --vocab "$models/ggml-vocab-gemma-4.gguf" --quantize q8_0 \
  --out "$out/gemma4-text.gguf" --seed 6
fixture gemma4-draft "gemma4-draft.gguf" --arch gemma4 --vocab "$models/ggml-vocab-gemma-4.gguf" --quantize q4_0 \
  --out "$out/gemma4-draft.gguf" --seed 6
fixture gemma4-head "gemma4-head-target.gguf gemma4-assistant.gguf" assistant --vocab "$models/ggml-vocab-gemma-4.gguf" \
  --alpha 0.0254 --quantize q8_0 --seed 6 --target "$out/gemma4-head-target.gguf" --out "$out/gemma4-assistant.gguf"
fixture gemma4-narrow-head "gemma4-narrow-target.gguf gemma4-narrow-assistant.gguf" assistant \
  --vocab "$models/ggml-vocab-gemma-4.gguf" --alpha 0 --n-embd 128 --output-dims 64 --quantize q8_0 --seed 6 \
  --target "$out/gemma4-narrow-target.gguf" --out "$out/gemma4-narrow-assistant.gguf"
fixture eagle3 "eagle3-target.gguf eagle3-head.gguf" eagle3 --vocab "$phi3" --alpha 0.0586 --seed 7 --n-layer 4 \
  --target "$out/eagle3-target.gguf" --out "$out/eagle3-head.gguf"
# The same head with attention that weighs every position alike: what it drafts depends on
# every pair its cache holds (tests of how the cache is fed). Its target is eagle3-target.gguf.
fixture eagle3-uniform "eagle3-uniform-head.gguf" eagle3 --vocab "$phi3" --alpha 0.0586 --seed 7 --n-layer 4 \
  --attention uniform --target "$out/.eagle3-uniform-target.tmp" --out "$out/eagle3-uniform-head.gguf"
rm -f "$out/.eagle3-uniform-target.tmp"
fixture dflash "dflash-target.gguf dflash-head.gguf" dflash --vocab "$phi3" --alpha 0.0592041 --seed 9 --n-layer 4 \
  --target "$out/dflash-target.gguf" --out "$out/dflash-head.gguf"
fixture mtp "mtp.gguf" mtp --vocab "$phi3" --alpha 0.0527344 --seed 8 --n-layer 4 --out "$out/mtp.gguf"
gemma4v_args=(projector --type gemma4v --n-embd-text 64 --seed 6)
fixture gemma4-mmproj "gemma4-mmproj.gguf" "${gemma4v_args[@]}" --out "$out/gemma4-mmproj.gguf"
fixture qwen-vl-text "qwen-vl-text.gguf" --arch qwen2vl --vocab "$models/ggml-vocab-qwen2.gguf" \
  --chat-template "$models/templates/Qwen-Qwen2.5-7B-Instruct.jinja" --quantize q8_0 --out "$out/qwen-vl-text.gguf" --seed 7
fixture qwen-vl-draft "qwen-vl-draft.gguf" --arch qwen2vl --vocab "$models/ggml-vocab-qwen2.gguf" \
  --chat-template "$models/templates/Qwen-Qwen2.5-7B-Instruct.jinja" --quantize q4_0 --out "$out/qwen-vl-draft.gguf" --seed 7
fixture qwen-vl-mmproj "qwen-vl-mmproj.gguf" projector --type qwen2.5vl_merger --n-embd-text 64 --seed 7 \
  --out "$out/qwen-vl-mmproj.gguf"
fixture qwen2-vl-mmproj "qwen2-vl-mmproj.gguf" projector --type qwen2vl_merger --n-embd-text 64 --seed 8 \
  --out "$out/qwen2-vl-mmproj.gguf"
fixture tiny-lora "tiny-lora.gguf" lora --out "$out/tiny-lora.gguf" --seed 5
fixture small-lora "small-lora.gguf" lora --n-embd 32 --out "$out/small-lora.gguf" --seed 5
for vocab in bert-bge starcoder; do
  cmp -s "$models/ggml-vocab-$vocab.gguf" "$out/vocab-$vocab.gguf" || cp "$models/ggml-vocab-$vocab.gguf" "$out/vocab-$vocab.gguf"
done

# Determinism: regenerate elsewhere and compare bytes.
check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
"$bin" --vocab "$phi3" --out "$check/tiny.gguf" --seed 1 >/dev/null
"$bin" "${mmproj_args[@]}" --out "$check/vision-mmproj.gguf" >/dev/null
"$bin" "${gemma4v_args[@]}" --out "$check/gemma4-mmproj.gguf" >/dev/null
compare="tiny.gguf vision-mmproj.gguf gemma4-mmproj.gguf"
if [[ "$generated" == *" pair "* ]]; then
  "$bin" "${pair_args[@]}" --draft "$check/pair-draft.gguf" --target "$check/pair-target.gguf" >/dev/null
  compare+=" pair-draft.gguf pair-target.gguf"
fi
for f in $compare; do
  if ! cmp -s "$check/$f" "$out/$f"; then
    echo "make-fixtures: specd-testmodel is not deterministic: $f differs when regenerated" >&2
    exit 1
  fi
done
echo "make-fixtures: determinism check passed ($compare)"
