#!/usr/bin/env bash
# Fetches the pinned llama.cpp (from the npm package node-llama-cpp, integrity-checked),
# and builds its libraries once into a cache keyed by the pin. Prints the install prefix.
#
# The cache lives outside the work tree so a fresh clone on the same machine reuses it:
#   ${SPECD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/specd}/llama-<commit>/src        the source
#   ${SPECD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/specd}/llama-<commit>-<config>/  build, prefix
# The build key carries the build configuration (BUILD_CONFIG below), so changing how the
# libraries are built (e.g. turning TLS on) never reuses a prefix built the old way.
# llama.cpp is always built in Release: sanitizer builds of specd instrument specd's own code
# and link these libraries, which keeps them fast enough to test.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=llama.pin
source "$here/llama.pin"

cache_root="${SPECD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/specd}"
# Bump when the cmake flags below change what the libraries contain. "tls": cpp-httplib built
# with OpenSSL (LLAMA_OPENSSL=ON), which https pulls need; cmake/llama.cmake checks it.
# "rpc": ggml's RPC backend (GGML_RPC=ON), which `specd worker` serves and `specd serve --rpc`
# offloads layers to.
# SPECD_LLAMA_OPENMP=ON|OFF chooses ggml's CPU threading (OpenMP is upstream's default);
# the choice is part of the key ("tls-rpc-omp" / "tls-rpc"), so both builds can sit side by side.
openmp="${SPECD_LLAMA_OPENMP:-OFF}"
case "$openmp" in
  ON)  BUILD_CONFIG="tls-rpc-omp" ;;
  OFF) BUILD_CONFIG="tls-rpc" ;;
  *) echo "[llama.sh] SPECD_LLAMA_OPENMP must be ON or OFF, not '$openmp'" >&2; exit 2 ;;
esac
# SPECD_LLAMA_NATIVE=OFF builds ggml's CPU code for any x86-64 with AVX2 instead of this
# machine's instruction set (GGML_NATIVE), for a binary that runs on another machine (a GPU
# host built for elsewhere); the key gains "-portable".
native="${SPECD_LLAMA_NATIVE:-ON}"
case "$native" in
  ON) ;;
  OFF) BUILD_CONFIG="$BUILD_CONFIG-portable" ;;
  *) echo "[llama.sh] SPECD_LLAMA_NATIVE must be ON or OFF, not '$native'" >&2; exit 2 ;;
esac
# SPECD_GPU chooses ggml's GPU backend beside the CPU (README "GPU builds"); each is a key of
# its own ("tls-rpc-vulkan", "tls-rpc-cuda86"). CUDA builds for CMAKE_CUDA_ARCHITECTURES
# (default 86: sm_86 code plus PTX that newer GPUs compile at load), which is part of the key.
gpu="${SPECD_GPU:-cpu}"
gpu_flags=()
gpu_targets=()
case "$gpu" in
  cpu) ;;
  vulkan)
    BUILD_CONFIG="$BUILD_CONFIG-vulkan"
    gpu_flags=(-DGGML_VULKAN=ON)
    gpu_targets=(ggml-vulkan) ;;
  cuda)
    cuda_arch="${CMAKE_CUDA_ARCHITECTURES:-86}"
    BUILD_CONFIG="$BUILD_CONFIG-cuda$(echo "$cuda_arch" | tr -c 'A-Za-z0-9\n' '_')"
    gpu_flags=(-DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$cuda_arch")
    if [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
      gpu_flags+=("-DCMAKE_CUDA_COMPILER=$CUDA_HOME/bin/nvcc")
    fi
    gpu_targets=(ggml-cuda) ;;
  metal)
    BUILD_CONFIG="$BUILD_CONFIG-metal"
    gpu_flags=(-DGGML_METAL=ON -DGGML_METAL_EMBED_LIBRARY=ON -DGGML_BLAS=ON)
    gpu_targets=(ggml-metal ggml-blas) ;;
  *) echo "[llama.sh] SPECD_GPU must be cpu, vulkan, cuda or metal, not '$gpu'" >&2; exit 2 ;;
esac
# GCC before 13 hands ldtilecfg an 8-byte operand (its amxtileintrin.h), so the compiler drops
# the stores that fill in the tile configuration's rows and widths: ggml's AMX kernels, which
# GGML_NATIVE turns on on Xeons with AMX (Sapphire Rapids and later), then load a configuration
# of stack garbage and fault (a general protection fault, SIGSEGV) in the first product of
# quantized weights over more than one row, a q8_0 model's prompt. With such a compiler ggml is
# built without AMX (its AVX-512 kernels do that work); the key gains "-noamx".
# On x86-64 ggml's f16 vector code (the attention's dot products with an f16 KV cache) is built
# without AVX512-FP16: with it (-march=native on a Sapphire Rapids Xeon) those sums are kept in
# half precision, and a greedy answer changed with speculation on (a verification's batch) and
# off at a token whose two best choices were 0.05 apart in log probability. Without it they are
# summed in f32, as on every other x86-64; the key gains "-nofp16".
cpu_flags=""
amx_flags="" # also llama-server's (build_server)
if [ "$(uname -m)" = x86_64 ]; then
  BUILD_CONFIG="$BUILD_CONFIG-nofp16"
  cpu_flags="-mno-avx512fp16"
  gnuc="$("${CXX:-c++}" -dM -E -x c++ /dev/null 2>/dev/null | awk '$2 == "__clang__" { c = 1 } $2 == "__GNUC__" { v = $3 } END { if (!c) print v }')"
  if [ -n "$gnuc" ] && [ "$gnuc" -lt 13 ]; then
    BUILD_CONFIG="$BUILD_CONFIG-noamx"
    amx_flags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    cpu_flags="$cpu_flags $amx_flags"
  fi
fi
key="llama-${LLAMA_COMMIT}-${BUILD_CONFIG}"
src_dir="$cache_root/llama-${LLAMA_COMMIT}/src"
# The public headers, models and vendored code depend on the pin alone: staged once and shared
# by every build variant, so specd's compile lines are the same whichever variant it links.
shared_dir="$cache_root/llama-${LLAMA_COMMIT}/shared"
build_dir="$cache_root/$key/build"
prefix="$cache_root/$key/prefix"
jobs="${SPECD_JOBS:-$(nproc)}"
# ggml compiles through ccache when it is installed (GGML_CCACHE, on by default). Every build
# directory sits two levels below the cache root and compiles the one shared source tree, so
# relative to the root the variants' compile lines match and share the cache.
export CCACHE_BASEDIR="$cache_root"
export CCACHE_NOHASHDIR=1

log() { echo "[llama.sh] $*" >&2; }

fetch_source() {
  if [ -f "$src_dir/.specd-ok" ]; then return; fi
  local tmp
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' RETURN
  log "fetching $NPM_PACKAGE with npm pack"
  (cd "$tmp" && npm pack --silent "$NPM_PACKAGE" >/dev/null)
  local tgz
  tgz="$(ls "$tmp"/*.tgz)"
  local got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$NPM_INTEGRITY" ]; then
    log "integrity mismatch for $NPM_PACKAGE: expected $NPM_INTEGRITY, got $got"
    exit 1
  fi
  log "integrity ok"
  tar -xzf "$tgz" -C "$tmp" package/llama/gitRelease.bundle
  rm -rf "$src_dir"
  mkdir -p "$(dirname "$src_dir")"
  git clone --quiet "$tmp/package/llama/gitRelease.bundle" "$src_dir"
  local head
  head="$(git -C "$src_dir" rev-parse HEAD)"
  case "$head" in
    "$LLAMA_COMMIT"*) ;;
    *) log "bundle HEAD $head is not the pinned commit $LLAMA_COMMIT"; exit 1 ;;
  esac
  touch "$src_dir/.specd-ok"
}

# Build-time compatibility patches (scripts/patches/*.patch), applied once to the fetched tree.
# Each is guarded by preprocessor checks, so it changes nothing where it is not needed:
#   ggml-vulkan-old-headers.patch: Debian 12's Vulkan headers (1.3.239) predate
#   VK_EXT_layer_settings, which ggml-vulkan uses only to configure the validation layer.
apply_patches() {
  local p name
  for p in "$here"/patches/*.patch; do
    [ -e "$p" ] || continue
    name="$(basename "$p")"
    [ -f "$src_dir/.specd-patch-$name" ] && continue
    if git -C "$src_dir" apply --check "$p" 2>/dev/null; then
      git -C "$src_dir" apply "$p"
    elif ! git -C "$src_dir" apply --check --reverse "$p" 2>/dev/null; then
      log "patch $name does not apply to the pinned tree"
      exit 1
    fi
    touch "$src_dir/.specd-patch-$name"
  done
}

build_libs() {
  if [ -f "$prefix/.specd-ok" ] && [ -f "$prefix/SHARED" ]; then stage_shared; return; fi
  # Two configures at once (two build dirs, or setup.sh beside cmake) would share one build
  # dir; the second waits and then finds the prefix complete.
  mkdir -p "$cache_root"
  exec 9>"$cache_root/$key.lock"
  flock 9
  if [ -f "$prefix/.specd-ok" ] && [ -f "$prefix/SHARED" ]; then return; fi
  log "building llama.cpp libraries into $prefix (one time, several minutes)"
  cmake -S "$src_dir" -B "$build_dir" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_COMMON=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_MTMD=ON -DLLAMA_OPENSSL=ON \
    -DGGML_NATIVE="$native" -DGGML_OPENMP="$openmp" -DGGML_RPC=ON "${gpu_flags[@]}" \
    -DCMAKE_C_FLAGS="$cpu_flags" -DCMAKE_CXX_FLAGS="$cpu_flags" \
    -DCMAKE_INSTALL_PREFIX="$prefix" >&2
  # Tools are configured only for llama.cpp's own RPC worker (ggml-rpc-server), which the tests
  # run beside `specd worker`; no other tool is built.
  cmake --build "$build_dir" -j "$jobs" --target llama ggml ggml-base ggml-cpu ggml-rpc llama-common llama-common-base mtmd cpp-httplib ggml-rpc-server "${gpu_targets[@]}" >&2
  # find_package(OpenSSL) failing only warns upstream and builds cpp-httplib without TLS.
  if ! grep -q 'CPPHTTPLIB_OPENSSL_SUPPORT' "$build_dir/build.ninja"; then
    log "cpp-httplib was built without OpenSSL: install the OpenSSL headers (libssl-dev)"
    exit 1
  fi
  stage_prefix
  touch "$prefix/.specd-ok"
}

# Copies the static libraries into the variant's prefix and, once per pin, the public headers
# specd includes (llama.cpp's install step exports neither llama-common nor mtmd), the vendored
# code and the vocab-only models into the shared folder; prefix/SHARED names that folder.
stage_prefix() {
  stage_shared
  rm -rf "$prefix"
  mkdir -p "$prefix/lib" "$prefix/bin"
  find "$build_dir" -name '*.a' -exec cp {} "$prefix/lib/" \;
  cp "$build_dir/bin/ggml-rpc-server" "$prefix/bin/rpc-server"
  echo "$shared_dir" > "$prefix/SHARED"
  # Libraries the static archives need that ggml found on this machine (upstream links them
  # when present): NCCL for ggml-cuda's multi-GPU reductions. One path per line.
  : > "$prefix/LINK"
  if grep -q 'GGML_USE_NCCL' "$build_dir/build.ninja"; then
    sed -n 's/^NCCL_LIBRARY:FILEPATH=//p' "$build_dir/CMakeCache.txt" >> "$prefix/LINK"
  fi
  echo "$LLAMA_COMMIT" > "$prefix/COMMIT"
  echo "$BUILD_CONFIG" > "$prefix/CONFIG"
}

# The staging header src/llama-ext.h (hidden-state rows for MTP heads) was added to the shared
# folder later: a folder staged without it is staged again.
stage_shared() {
  if [ -f "$shared_dir/.specd-ok" ] && [ -f "$shared_dir/include/llama-ext.h" ]; then return; fi
  rm -rf "$shared_dir"
  mkdir -p "$shared_dir/include/common" "$shared_dir/include/mtmd" "$shared_dir/vendor" "$shared_dir/models"
  cp "$src_dir"/include/*.h "$shared_dir/include/"
  cp "$src_dir"/ggml/include/*.h "$shared_dir/include/"
  cp "$src_dir"/src/llama-ext.h "$shared_dir/include/"
  (cd "$src_dir/common" && find . \( -name '*.h' -o -name '*.hpp' \) -exec cp --parents {} "$shared_dir/include/common/" \;)
  cp "$src_dir"/tools/mtmd/*.h "$shared_dir/include/mtmd/"
  cp -r "$src_dir/vendor/." "$shared_dir/vendor/"
  cp "$src_dir"/models/ggml-vocab-*.gguf "$shared_dir/models/"
  cp -r "$src_dir/models/templates" "$shared_dir/models/templates"
  touch "$shared_dir/.specd-ok"
}

# llama-server from the same tree, only for the benchmarks' side-by-side runs, built as its
# users build it: upstream's default options (OpenMP, native CPU flags, AVX512-FP16 where the
# CPU has it, OpenSSL), only the targets narrowed (no tests, examples or web UI: the UI would
# be downloaded, and a benchmark does not use it). One exception, where the compiler needs it:
# without AMX under GCC before 13 (see amx_flags), which otherwise builds a llama-server that
# dies the same way (measured on a Sapphire Rapids Xeon with Debian 12's GCC 12: SIGILL at
# `tilezero` in tinygemm_kernel_amx<block_q8_0>, its first speculative request on gemma4's
# q8_0 fixture); the key then gains "-noamx". Its own key: it does not depend on how specd's
# libraries are built otherwise.
build_server() {
  local server_key="llama-${LLAMA_COMMIT}-server-upstream${amx_flags:+-noamx}"
  local server_build="$cache_root/$server_key/build"
  # Upstream builds shared libraries by default: the binary stays beside them.
  local bin="$server_build/bin/llama-server"
  if [ -x "$bin" ]; then echo "$bin"; return; fi
  mkdir -p "$cache_root"
  exec 8>"$cache_root/$server_key.lock"
  flock 8
  if [ -x "$bin" ]; then echo "$bin"; return; fi
  log "building llama-server for benchmarks (one time, several minutes)"
  cmake -S "$src_dir" -B "$server_build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    ${amx_flags:+-DCMAKE_C_FLAGS="$amx_flags" -DCMAKE_CXX_FLAGS="$amx_flags"} >&2
  cmake --build "$server_build" -j "$jobs" --target llama-server >&2
  echo "$bin"
}

case "${1:-build}" in
  source) fetch_source; echo "$src_dir" ;;
  config) echo "$BUILD_CONFIG" ;;
  build)  fetch_source; apply_patches; build_libs; echo "$prefix" ;;
  server) fetch_source; build_server ;;
  *) echo "usage: $0 [source|build|server|config]" >&2; exit 2 ;;
esac
