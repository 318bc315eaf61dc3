#!/usr/bin/env bash
# Embedding check: installs the lumen built in BUILD_DIR into a temporary prefix, then builds
# and runs examples/embed against it, as a program outside the lumen tree would:
#   1. with find_package(lumen), CPU-only, with the CUDA toolkit hidden from CMake: it must
#      configure, link no CUDA library (ldd) and run; the program's own core/error.h must not
#      shadow lumen's; examples/cnn_classifier.cpp and unet.cpp are built beside it;
#   2. with pkg-config (lumen.pc);
#   3. when the install has the CUDA backend: with find_package(lumen COMPONENTS cuda) and
#      lumen::cuda, which must report the backend linked.
# Run by ctest as the test `embed`. Usage: bash scripts/test_embed.sh BUILD_DIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bash scripts/test_embed.sh BUILD_DIR" >&2; exit 2; }
build_dir=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "$0")/.." && pwd)
embed=$source_dir/examples/embed

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "test_embed.sh: $*" >&2; exit 1; }

cmake --install "$build_dir" --prefix "$work/prefix" >"$work/install.log" \
    || { cat "$work/install.log"; exit 1; }
prefix=$work/prefix
libdir=$(dirname "$(find "$prefix" -name lumenConfig.cmake -path "*cmake/lumen/*")")
libdir=$(cd "$libdir/../.." && pwd)
for internal in ops/elementwise_kernels.h ops/loss_math.h core/strided_impl.h core/json_strict.h; do
    [ ! -e "$prefix/include/lumen/$internal" ] || fail "internal header $internal was installed"
done

# 1. CPU-only through CMake, the toolkit hidden.
cmake -S "$embed" -B "$work/cpu" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON >"$work/cpu.log" || { cat "$work/cpu.log"; exit 1; }
cmake --build "$work/cpu" --parallel "${JOBS:-2}"
if ldd "$work/cpu/app" | grep -E "libcuda|libcudart|libcublas|libcufft|libnccl"; then
    fail "the CPU-only program links CUDA libraries (above)"
fi
"$work/cpu/app" | tee "$work/cpu.out"
grep -q "CUDA backend: not linked" "$work/cpu.out" || fail "the CPU-only program has the CUDA backend"

# 2. pkg-config.
export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046
g++ -O2 -I"$embed" "$embed/main.cpp" -o "$work/app_pc" $(pkg-config --cflags --libs lumen)
"$work/app_pc" >"$work/pc.out" || { cat "$work/pc.out"; fail "the pkg-config build failed"; }
echo "pkg-config build: ok"

# 3. With the CUDA backend, when installed (no GPU needed: it only has to link and load).
if [ -e "$libdir/cmake/lumen/lumenCudaTargets.cmake" ]; then
    cmake -S "$embed" -B "$work/cuda" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
        -DEMBED_CUDA=ON >"$work/cuda.log" || { cat "$work/cuda.log"; exit 1; }
    cmake --build "$work/cuda" --parallel "${JOBS:-2}" --target app
    "$work/cuda/app" >"$work/cuda.out" || { cat "$work/cuda.out"; fail "the CUDA-linked program failed"; }
    grep -q "CUDA backend: linked" "$work/cuda.out" || fail "lumen::cuda did not link the backend"
    echo "CUDA component build: ok (backend linked)"
fi
