#!/usr/bin/env bash
# The sanitizer half of the test command: builds the unit tests, the `lumen` binary and the
# hostile-corpus generator with AddressSanitizer and UndefinedBehaviorSanitizer into
# build-sanitize/, then runs under them the unit tests listed in SANITIZE_TESTS below and the
# hostile-file corpus. Any finding aborts with a report and a non-zero exit.
# Instrumented (-DLUMEN_SANITIZE=ON, scope io, -O1): every file that reads or checks input
# (core/*.cpp, train/ with the CLI, datasets/, nn/module, nn/options, nn/state_dict,
# models/registry) and the tests that drive them. The op kernels, layers and models compile as
# in the main build, uninstrumented, so that ccache serves them from it and the second build
# costs minutes, not the hour that instrumenting everything takes on 2 cores
# (LUMEN_SANITIZE_SCOPE=all does that). Usage: bash scripts/test_sanitize.sh
# Environment: JOBS, SANITIZE_BUILD_DIR (default build-sanitize), LUMEN_CUDA as in build.sh
# (the same value as the main build, for ccache), SANITIZE_TESTS.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
build_dir=${SANITIZE_BUILD_DIR:-build-sanitize}
jobs=${JOBS:-2}
if [ -z "${LUMEN_CUDA:-}" ]; then
    LUMEN_CUDA=OFF
    if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null; then LUMEN_CUDA=ON; fi
fi

# The tests run (Catch2 tags): everything that reads files or parses input (safetensors, JSON,
# configs, checkpoints, IDX, the conformance runner), the trainer and the CLI with their
# kill-and-resume and fault-injection tests, the module system, the data loader and the
# registry. The op, layer and model tests ([ops], [nn] layers, [models], [cuda]) are left out:
# they exercise the uninstrumented kernels (LUMEN_SANITIZE_SCOPE=all runs them instrumented).
SANITIZE_TESTS=${SANITIZE_TESTS:-"[io],[train],[cli],[datasets],[module],[registry]"}

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DLUMEN_CUDA="$LUMEN_CUDA" -DLUMEN_NATIVE="${LUMEN_NATIVE:-ON}" \
    -DLUMEN_BUILD_TESTS=ON -DLUMEN_SANITIZE=ON -DLUMEN_SANITIZE_SCOPE=io >/dev/null
cmake --build "$build_dir" --parallel "$jobs" --target lumen_tests lumen_cli lumen_hostile_corpus

# container overflow checks need every file instrumented (they misfire across the boundary);
# protect_shadow_gap=0 lets the CUDA runtime map its memory when lumen was built with CUDA.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_container_overflow=0:protect_shadow_gap=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
status=0
"$build_dir/tests/lumen_tests" "$SANITIZE_TESTS" --order rand --rng-seed 1 || status=$?
bash tests/hostile/run_corpus.sh "$build_dir/lumen" "$build_dir/tests/lumen_hostile_corpus" \
    120 4096 || status=$?
echo "test_sanitize.sh: $([ $status -eq 0 ] && echo passed || echo FAILED) in" \
    "$((SECONDS - start)) s (tests $SANITIZE_TESTS and the hostile corpus under ASan+UBSan)"
exit $status
