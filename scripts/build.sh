#!/usr/bin/env bash
# Configures and builds lumen in Release into build/ (all targets, or the ones named).
# The CUDA backend is built when nvcc is found (/usr/local/cuda/bin/nvcc or on PATH); ccache is
# used when installed (CMakeLists.txt looks for it).
# Usage: bash scripts/build.sh [target...]
# Environment: JOBS (default 2), BUILD_DIR (default build), LUMEN_CUDA (ON/OFF, default auto),
#              LUMEN_NATIVE (ON: code for this machine's CPU, the default here; OFF: portable),
#              CMAKE_ARGS (extra configure arguments, e.g. "-DLUMEN_BUILD_BENCH=OFF").
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-2}
if [ -z "${LUMEN_CUDA:-}" ]; then
    LUMEN_CUDA=OFF
    if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null; then LUMEN_CUDA=ON; fi
fi

# CMAKE_ARGS is split on spaces on purpose: it holds several -D options.
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DLUMEN_CUDA="$LUMEN_CUDA" \
    -DLUMEN_NATIVE="${LUMEN_NATIVE:-ON}" ${CMAKE_ARGS:-}

targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build "$build_dir" --parallel "$jobs" "${targets[@]}"
