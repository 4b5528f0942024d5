#!/usr/bin/env bash
# Installs what building and testing specd needs on Debian 12, only when something is
# missing (so a second run does not touch apt), then fetches and builds the pinned llama.cpp
# into its cache (scripts/llama.sh; also a no-op once cached).
#   usage: scripts/setup.sh [EXTRA_PACKAGE...]   (e.g. the fuzzers' clang)
set -euo pipefail

# libssl-dev: llama.cpp's cpp-httplib is built with OpenSSL for https pulls (scripts/llama.sh).
# libboost-dev: Boost.Asio and Boost.Beast (header-only) for the HTTP server (src/http).
# libcli11-dev, libreadline-dev: the CLI's argument parsing and line editing (src/cli).
# tmux: the e2e tests type into the interactive mode through a terminal (cli_terminal).
# libjemalloc2: a test runs the allocator report under a preloaded jemalloc (docs/memory.md).
# haproxy: the replicas test runs deploy/haproxy.cfg in front of three servers (docs/deploy.md).
# ccache: llama.cpp's build variants (SPECD_GPU) and specd's build folders share compiled objects.
packages=(cmake ninja-build g++ git ca-certificates openssl libssl-dev libboost-dev libgtest-dev libcli11-dev
          libreadline-dev tmux libjemalloc2 haproxy nodejs npm curl ccache "$@")
# SPECD_GPU=vulkan: ggml's Vulkan backend needs the loader's headers, the shader compilers and
# SPIR-V headers (its configure fails without them); Mesa's drivers include lavapipe, which
# runs Vulkan on the CPU where there is no GPU (the tests). CUDA's toolkit is not a Debian
# package of the version ggml needs: SPECD_GPU=cuda expects nvcc under CUDA_HOME or on PATH.
case "${SPECD_GPU:-cpu}" in
  vulkan) packages+=(libvulkan-dev glslc spirv-headers glslang-tools mesa-vulkan-drivers) ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from outside Debian (e.g. a newer release in /usr/bin): that is fine.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs/}")
  missing=("${missing[@]/npm/}")
fi
read -r -a missing <<< "${missing[*]:-}"
if [ "${#missing[@]}" -gt 0 ]; then
  echo "[setup] installing: ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >&2
fi

bash "$(dirname "${BASH_SOURCE[0]}")/llama.sh" build >/dev/null
