#!/usr/bin/env bash
# README command 1: set up, build, create a small generated demo model and serve it on
# 127.0.0.1:11434 (SPECD_HOST changes that). The demo model has random weights: it shows the
# server working, not a model talking sense. Stop with Ctrl-C.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target specd specd-testmodel

models_src="$(bash scripts/llama.sh source)/models"
demo_dir="${SPECD_DEMO_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/specd/demo}"
mkdir -p "$demo_dir"
if [ ! -f "$demo_dir/demo.gguf" ]; then
  build/bin/specd-testmodel --vocab "$models_src/ggml-vocab-phi-3.gguf" --out "$demo_dir/demo.gguf" \
    --n-embd 128 --n-layer 4 --seed 7 >/dev/null
fi
cat > "$demo_dir/Modelfile" <<MODELFILE
FROM ./demo.gguf
PARAMETER num_predict 64
MODELFILE
build/bin/specd create demo -f "$demo_dir/Modelfile"

host="${SPECD_HOST:-${OLLAMA_HOST:-127.0.0.1:11434}}"
cat <<MSG

specd is starting on $host with the model "demo". Try, from another terminal:

  curl http://$host/api/generate -d '{"model": "demo", "prompt": "Why is the sky blue?", "stream": false}'
  curl http://$host/api/chat -d '{"model": "demo", "messages": [{"role": "user", "content": "hi"}], "format": "json"}'
  build/bin/specd run demo "hello"

MSG
exec build/bin/specd serve
