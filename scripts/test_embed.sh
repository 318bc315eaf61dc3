#!/usr/bin/env bash
# Embedding check: installs the lumen built in BUILD_DIR into a temporary prefix, then
# configures, builds and runs examples/embed against it (find_package(lumen)), which also
# builds examples/cnn_classifier.cpp and examples/unet.cpp. Run by ctest as the test `embed`.
# Usage: bash scripts/test_embed.sh BUILD_DIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bash scripts/test_embed.sh BUILD_DIR" >&2; exit 2; }
build_dir=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "$0")/.." && pwd)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >"$work/install.log" \
    || { cat "$work/install.log"; exit 1; }
cmake -S "$source_dir/examples/embed" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$work/prefix"
cmake --build "$work/build" --parallel "${JOBS:-2}"
"$work/build/app"
