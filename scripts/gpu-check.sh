#!/usr/bin/env bash
# GPU check, for a machine with an NVIDIA GPU and the CUDA toolkit: builds lumen with
# LUMEN_CUDA=ON and tests on, runs the whole ctest suite (the CUDA tests run instead of
# skipping), the CUDA tests once more on their own with their assertion counts, `lumen info`
# and the GPU kernel benchmarks (every bench_cuda* next to its bench/torch_cuda*.py twin through
# bench/run.sh --device cuda, PYTHON default python3);
# writes everything to bench/results/gpu-<hostname>-<date>.log and exits
# non-zero on any failure.
# The build's dependencies (Eigen, nlohmann-json, Catch2, zlib) must be installed
# (scripts/setup.sh does it where apt works); where they cannot be, the header-only ones can
# come in .devdeps/ from scripts/gpu-deps.sh (zlib is expected on the machine).
# Usage: bash scripts/gpu-check.sh   Environment: JOBS (default: all cores), BUILD_DIR
#        (default build-gpu), LUMEN_COMMIT (the commit to name in the log, for copies of a
#        working tree whose git HEAD is stale).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-gpu}
mkdir -p bench/results
log="bench/results/gpu-$(hostname)-$(date +%Y-%m-%d).log"

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu-check.sh: no NVIDIA GPU visible (nvidia-smi -L failed)" >&2
    exit 1
fi
mkdir -p "$build_dir"
# Header-only dependencies packed by scripts/gpu-deps.sh, for machines without the packages.
if [ -d .devdeps/usr ]; then
    CMAKE_ARGS="${CMAKE_ARGS:-} -DCMAKE_PREFIX_PATH=$PWD/.devdeps/usr"
fi
set +e
{
    status=0
    echo "# lumen GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit ${LUMEN_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    nvidia-smi -L
    "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" --version | tail -1
    JOBS=${JOBS:-$(nproc)} BUILD_DIR="$build_dir" LUMEN_CUDA=ON \
        CMAKE_ARGS="${CMAKE_ARGS:-} -DLUMEN_BUILD_TESTS=ON" bash scripts/build.sh >"$build_dir/gpu-check-build.log" 2>&1 \
        || { echo "build failed:"; grep -E "error" -A5 "$build_dir/gpu-check-build.log" | head -80; exit 1; }
    echo "build: $(grep -c 'warning' "$build_dir/gpu-check-build.log" || true) warnings"
    "$build_dir/lumen" info
    # Launches made synchronous for the CUDA tests: a kernel's fault is reported at its own
    # launch check (naming the kernel), not at a later copy.
    CUDA_LAUNCH_BLOCKING=1 "$build_dir/tests/lumen_tests" "[cuda]" || status=1
    ctest --test-dir "$build_dir" --output-on-failure || status=1
    echo "## check-vectors --device cuda"
    "$build_dir/lumen" check-vectors tests/data/oracle --device cuda | tail -40 || status=1
    echo "## GPU kernel benchmarks (issue 4) through bench/run.sh: lumen, then PyTorch (${PYTHON:-python3})"
    # Every bench/bench_cuda*.cpp beside its bench/torch_cuda*.py twin, summarized in
    # bench/results/<host>-kernels-<date>-cuda.{json,md}. The whole of issue 8 on the GPU is
    # `bash bench/run.sh --device cuda` (docs/benchmarks.md).
    suites=""
    for source in bench/bench_cuda*.cpp; do
        name=$(basename "$source" .cpp)
        suites+="${name#bench_} "
    done
    MACHINE="$(hostname)-kernels" BUILD_DIR="$build_dir" REPEATS=20 \
        bash bench/run.sh --device cuda --suites "$suites" || status=1
    echo "gpu-check.sh: $([ $status -eq 0 ] && echo passed || echo FAILED)"
    exit $status
} 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
echo "wrote $log" >&2
exit "$status"
