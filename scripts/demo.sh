#!/usr/bin/env bash
# README command 1: set up, build, generate a small demo model and serve it on
# 127.0.0.1:11434 (SPECD_HOST changes that, SPECD_MODELS the store it goes into). The model
# has random weights: it shows the server at work (speculation with a draft model, a JSON
# schema enforced, an image, the dashboard), not a model talking sense. Stop with Ctrl-C.
# Every example it prints is run by tests/e2e/demo.test.mjs (which sets
# SPECD_DEMO_SKIP_BUILD=1: the test run has built already). SPECD_GPU=vulkan|cuda|metal
# builds and serves that GPU build instead (scripts/build.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

gpu="${SPECD_GPU:-cpu}"
case "$gpu" in
  cpu) preset=release; bin=build/bin ;;
  vulkan|cuda|metal) preset=$gpu; bin=build-$gpu/bin ;;
  *) echo "scripts/demo.sh: unknown SPECD_GPU '$gpu' (cpu, vulkan, cuda, metal)" >&2; exit 2 ;;
esac
if [ "${SPECD_DEMO_SKIP_BUILD:-0}" != 1 ]; then
  if [ "$(uname -s)" = Linux ]; then SPECD_GPU=$gpu bash scripts/setup.sh; fi
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" --target specd specd-testmodel
fi

models_src="$(bash scripts/llama.sh source)/models"
demo_dir="${SPECD_DEMO_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/specd/demo}"
mkdir -p "$demo_dir"
demo_dir=$(cd "$demo_dir" && pwd)
tool=$bin/specd-testmodel
# A target (13 layers, 120 MB) and a one-layer Q8_0 draft (19 MB) that agrees with it on most
# greedy choices, so that speculation pays; a gemma3-type vision projector for the target, and
# a picture to send it. Generated once (about 15 seconds).
if [ ! -f "$demo_dir/.v2" ]; then
  echo "generating the demo model (once) in $demo_dir" >&2
  "$tool" pair --vocab "$models_src/ggml-vocab-phi-3.gguf" --agreement 0.8 --seed 7 --n-embd 256 --n-ff 1024 \
    --n-layer 1 --extra-layers 12 --draft-type q8_0 \
    --target "$demo_dir/demo-target.gguf" --draft "$demo_dir/demo-draft.gguf" >/dev/null
  "$tool" projector --type gemma3 --n-embd-text 256 --seed 7 --out "$demo_dir/demo-mmproj.gguf" >/dev/null
  "$tool" image --width 64 --height 64 --seed 3 --out "$demo_dir/demo.bmp"
  touch "$demo_dir/.v2"
fi
cat > "$demo_dir/Modelfile" <<MODELFILE
FROM ./demo-target.gguf
FROM ./demo-mmproj.gguf
DRAFT ./demo-draft.gguf
PARAMETER num_predict 64
MODELFILE
"$bin/specd" create demo -f "$demo_dir/Modelfile" >/dev/null

host="${SPECD_HOST:-${OLLAMA_HOST:-127.0.0.1:11434}}"
host="${host#http://}"
host="${host%/}"
case "$host" in
  :*) host="127.0.0.1$host" ;;
  \[*\]) host="$host:11434" ;;
  *:*) ;;
  *) host="$host:11434" ;;
esac
url="http://$host"
# A schema whose every string and array is bounded: a random model never closes a free
# string by itself, so the answer would otherwise end at num_predict, cut.
schema='{"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 120}, "colors": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 1, "maxItems": 3}}, "required": ["name", "age", "colors"], "additionalProperties": false}'

cat <<MSG

specd is starting on $host with the model "demo": a generated target with a draft model
(speculative decoding) and a vision projector. Try, from another terminal:

A generation (the draft proposes tokens, the target verifies them):
  curl $url/api/generate -d '{"model": "demo", "prompt": "Why is the sky blue?", "stream": false}'

Structured output: the schema is enforced while the draft keeps proposing under it:
  curl $url/api/chat -d '{"model": "demo", "messages": [{"role": "user", "content": "Describe a person as JSON."}], "format": $schema, "stream": false, "options": {"num_predict": 200}}'

A streamed chat (one JSON object per line):
  curl $url/api/chat -d '{"model": "demo", "messages": [{"role": "user", "content": "hello"}]}'

An image:
  curl $url/api/generate -d "{\"model\": \"demo\", \"prompt\": \"What is in this picture?\", \"images\": [\"\$(base64 -w0 '$demo_dir/demo.bmp')\"], \"stream\": false}"

The command line:
  $bin/specd run --host $host demo "hello"

What ran: loaded models (threads, memory by bucket), and the speculation counters:
  curl $url/api/ps
  curl -s $url/metrics | grep -E '^specd_spec_(rounds|drafted|accepted|forced)'

The dashboard (tokens/s, acceptance and depth, memory, the scheduler, live):
  $url/ui

MSG
exec "$bin/specd" serve --host "$host"
