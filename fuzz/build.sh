#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/fuzz_targets.cpp, one binary per reader) with clang, libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer into build-fuzz/. The readers' sources (and
# what they parse with: safetensors, strict JSON, file I/O, configs) are compiled here with
# coverage and sanitizers; the rest of lumen comes from the main build's liblumen.a (built
# first when missing), uninstrumented. Usage: bash fuzz/build.sh   (BUILD_DIR, FUZZ_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
out=${FUZZ_DIR:-build-fuzz}
command -v clang++ >/dev/null || { echo "fuzz/build.sh: needs clang (apt install clang)" >&2; exit 1; }
[ -f "$build/liblumen.a" ] || bash scripts/build.sh lumen
cuda=$(grep -E '^LUMEN_CUDA:BOOL=' "$build/CMakeCache.txt" | cut -d= -f2)
defines="-DLUMEN_CUDA=$([ "$cuda" = ON ] && echo 1 || echo 0)"
libs=(-lz -lgomp -lpthread)
if [ "$cuda" = ON ]; then
    libs+=(-L/usr/local/cuda/lib64 -lcudart -lcufft -Wl,-rpath,/usr/local/cuda/lib64)
fi
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
       -fno-sanitize-recover=all -I. -Iinclude "$defines")
sources=(core/safetensors.cpp core/json_strict.cpp core/file_io.cpp core/fault.cpp
         datasets/npy.cpp datasets/zip.cpp datasets/nifti.cpp datasets/image.cpp datasets/idx.cpp
         datasets/text.cpp
         train/config.cpp nn/options.cpp)
mkdir -p "$out/obj"
objects=()
for source in "${sources[@]}"; do
    object="$out/obj/$(echo "$source" | tr / _).o"
    extra=()
    # stb_image copies 0 bytes from a null buffer for an empty first IDAT chunk
    # (memcpy(NULL, p, 0)): undefined by the letter of the standard, harmless, and not ours.
    [ "$source" = datasets/image.cpp ] && extra=(-fno-sanitize=nonnull-attribute)
    if [ ! -f "$object" ] || [ "$source" -nt "$object" ] || [ "$0" -nt "$object" ]; then
        clang++ "${flags[@]}" "${extra[@]}" -c "$source" -o "$object"
    fi
    objects+=("$object")
done
targets=(safetensors nifti npy npz image idx config csv)
for i in "${!targets[@]}"; do
    clang++ "${flags[@]}" -fsanitize=fuzzer -DFUZZ_TARGET=$((i + 1)) fuzz/fuzz_targets.cpp \
        "${objects[@]}" "$build/liblumen.a" "${libs[@]}" -o "$out/fuzz_${targets[$i]}"
done
echo "fuzz/build.sh: built ${targets[*]/#/fuzz_} in $out"
