#!/usr/bin/env bash
# Packs the header-only build dependencies (Eigen, nlohmann-json, Catch2, stb: headers plus
# their CMake package files, in /usr's layout) into .devdeps/ (ignored by .gitignore), for a GPU machine
# that has the CUDA toolkit and CMake but no Debian packages and no network. Run it here, carry
# .devdeps with the working tree, and scripts/gpu-check.sh picks it up there. It also copies
# the PyTorch reference modules (../shared/oracle/ref_*.py, outside the checkout) into
# .devdeps/oracle, where bench/torch_util.py finds them when ../shared is not beside the
# checkout (the GPU benchmarks' PyTorch side, bench/run.sh --device cuda).
# Usage: bash scripts/gpu-deps.sh   (needs the packages: bash scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
out=.devdeps/usr
rm -rf .devdeps
mkdir -p "$out/include" "$out/share" "$out/lib/cmake"
cp -r /usr/include/eigen3 /usr/include/nlohmann /usr/include/catch2 "$out/include/"
[ -d /usr/include/stb ] && cp -r /usr/include/stb "$out/include/"
cp -r /usr/share/eigen3 "$out/share/"
mkdir -p "$out/share/cmake"
cp -r /usr/share/cmake/nlohmann_json "$out/share/cmake/"
cp -r /usr/lib/cmake/Catch2 "$out/lib/cmake/"
cp /usr/lib/libCatch2WithMain.a "$out/lib/"  # listed by Catch2Targets.cmake
oracle=${LUMEN_ORACLE:-../shared/oracle}
if ls "$oracle"/ref_*.py >/dev/null 2>&1; then
    mkdir -p .devdeps/oracle
    cp "$oracle"/ref_*.py .devdeps/oracle/
else
    echo "gpu-deps.sh: no reference modules at $oracle (LUMEN_ORACLE): the PyTorch side of the" \
        "attention, train and scaling benchmarks will say so and stand aside" >&2
fi
echo "gpu-deps.sh: wrote .devdeps ($(du -sh .devdeps | cut -f1)); carry it to the GPU machine"
