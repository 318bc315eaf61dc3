#!/usr/bin/env bash
# Compares lumen (bench/bench_<suite>.cpp) with PyTorch (bench/torch_<suite>.py) on the same
# workloads in the same run, alternating the two, and writes bench/results/<machine>-<date>.json
# and .md (bench/summarize.py) and, for a full run, the plots in docs/ (bench/plot.py).
# Suites: core, ops, attention, train (when bench/bench_train.cpp exists), scaling, models (a
# training step of every paper model, bench/models.json; about 30 minutes on 2 cores). The
# attention, scaling and models workloads run one per process (fresh peak memory), each under
# WORKLOAD_TIMEOUT.
#
# Usage: bash bench/run.sh [--quick] [--suites "core ops ..."] [--only NAMES] [--out DIR]
#                          [--device cuda]
#   --quick   sgemm_1024, attn_mhsa_n1024 and vit_train_step only, 3 repeats (results
#             <machine>-<date>-quick)
#   --only    workloads by name or prefix, e.g. attn_mhsa,sgemm_1024 (results ...-partial)
#   --device cuda  the same workloads on the GPU against PyTorch 2.x on CUDA (python3 from PATH),
#             plus the CUDA kernel suites of issue 4 (bench_cuda*); lumen built with CUDA in
#             build-bench-cuda; memory = allocator peaks (lumen's caching allocator, PyTorch's
#             max_memory_allocated); results <machine>-<date>-cuda, plots in docs/cuda/.
# Environment: THREADS (all cores), ROUNDS (1: alternations, the best median kept), REPEATS (7),
#   WORKLOAD_TIMEOUT (600 s), BENCH_MEMORY_LIMIT_GB (8; on CUDA 90% of the GPU's memory), PYTHON
#   (/usr/bin/python3; on CUDA python3), MACHINE (hostname), BUILD_DIR (build-bench, or
#   build-bench-cuda), BENCH_WORK (a folder that keeps the raw results across runs, see below).
#   docs/benchmarks.md explains how to read the results.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quick=0
suites=""
names=""
out=$root/bench/results
device=cpu
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) quick=1 ;;
        --device) device=$2; shift ;;
        --suites) suites=$2; shift ;;
        --only) names=$2; shift ;;
        --out) out=$2; shift ;;
        -h | --help) sed -n '2,21p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done

case $device in
    cpu) cuda=OFF; build=${BUILD_DIR:-$root/build-bench}; python=${PYTHON:-/usr/bin/python3} ;;
    cuda | cuda:*)
        cuda=ON
        build=${BUILD_DIR:-$root/build-bench-cuda}
        python=${PYTHON:-python3}
        if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
            echo "run.sh: --device $device, but no NVIDIA GPU is visible (nvidia-smi -L failed)" >&2
            exit 1
        fi
        gpu_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
        export BENCH_MEMORY_LIMIT_GB=${BENCH_MEMORY_LIMIT_GB:-$((gpu_mib * 9 / 10 / 1000))}
        export BENCH_GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) ;;
    *) echo "run.sh: --device '$device': expected cpu or cuda[:i]" >&2; exit 2 ;;
esac
export BENCH_DEVICE=$device
threads=${THREADS:-$(nproc)}
rounds=${ROUNDS:-1}
repeats=${REPEATS:-7}
timeout_s=${WORKLOAD_TIMEOUT:-600}
# PyTorch's OpenMP threads sleep when idle, as lumen's own pool does (core/parallel.cpp): on a busy
# machine spinning slows small ops down a lot; on a quiet one both perform alike.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
export PYTHON=$python BENCH_LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
start=$SECONDS

# ---- what to run: suites, and the workloads of each in --quick mode ----
suites=${suites:-core ops attention train scaling models}
# On a GPU, issue 4's kernel suites too: bench_cuda*.cpp beside their torch_cuda*.py twins.
if [[ $cuda == ON && $quick == 0 && -z $names && $suites == "core ops attention train scaling models" ]]; then
    for source in "$root"/bench/bench_cuda*.cpp; do
        name=$(basename "$source" .cpp)
        suites+=" ${name#bench_}"
    done
fi
declare -A only=()
if [[ $quick == 1 ]]; then
    suites="core attention train"
    only=([core]=sgemm_1024 [attention]=attn_mhsa_n1024 [train]=vit_train_step)
    repeats=${REPEATS:-3}
fi
present=()
for suite in $suites; do
    [[ -n $names ]] && only[$suite]=$names
    if [[ -f $root/bench/bench_$suite.cpp ]]; then present+=("$suite")
    else echo "run.sh: no bench/bench_$suite.cpp, skipping suite '$suite'" >&2; fi
done

# ---- dependencies (idempotent) and build (a no-op when up to date) ----
cmake_args=()
if [[ $cuda == OFF ]]; then
    bash "$root/scripts/setup.sh" --bench
else
    # Debian's python3-torch has no CUDA: the GPU side is the PyTorch 2.x of the machine. GPU
    # machines may have no network: the build packages are installed if possible, else the
    # header-only ones may come in .devdeps/ (scripts/gpu-deps.sh).
    bash "$root/scripts/setup.sh" || echo "run.sh: setup.sh failed; building with what is here" >&2
    [[ -d $root/.devdeps/usr ]] && cmake_args+=(-DCMAKE_PREFIX_PATH="$root/.devdeps/usr")
fi
# Configured every time: a bench_*.cpp added since the last run is a new target, which the
# build step alone would not know yet (its glob is re-read only while building).
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLUMEN_CUDA=$cuda -DLUMEN_NATIVE=ON \
    -DLUMEN_BUILD_TESTS=OFF "${cmake_args[@]}" >/dev/null
targets=()
for suite in "${present[@]}"; do targets+=("bench_$suite"); done
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null

# BENCH_WORK keeps the raw JSON lines of both sides in a folder across invocations (each
# summary then covers everything collected so far), so that a long run can be cut into
# several shorter ones, e.g. one per suite where a command may only run for 10 minutes.
if [[ -n ${BENCH_WORK:-} ]]; then
    work=$BENCH_WORK
    mkdir -p "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi

# run_side SIDE SUITE [--only NAMES]: one process of one side; its JSON lines go to SIDE.jsonl.
# A workload process that times out or fails is recorded as skipped, with the reason.
run_side() {
    local side=$1 suite=$2 command status=0
    shift 2
    if [[ $side == lumen ]]; then command=("$build/bench/bench_$suite")
    else command=("$python" "$root/bench/torch_$suite.py"); fi
    timeout "$timeout_s" "${command[@]}" --threads "$threads" --repeats "$repeats" \
        --device "$device" "$@" >"$work/out" || status=$?
    grep '^{' "$work/out" >>"$work/$side.jsonl" || true
    [[ $status != 0 ]] && echo "run.sh: $side $suite $*: exit status $status" >&2
    if [[ $status != 0 && $# == 2 ]]; then
        local why="failed (exit $status)"
        [[ $status == 124 ]] && why="ran out of time (> $timeout_s s)"
        [[ $status == 137 ]] && why="killed (out of memory?)"
        for name in "$2" "$2_mem"; do
            printf '{"name": "%s", "unit": "%s", "value": null, "ms": null, "skipped": "%s"}\n' \
                "$name" "$([[ $name == *_mem ]] && echo "MB peak" || echo ms)" "$why" \
                >>"$work/$side.jsonl"
        done
    fi
    return 0
}

# ---- runs: lumen then PyTorch on each workload (per-process suites) or each suite ----
for ((round = 1; round <= rounds; ++round)); do
    for suite in "${present[@]}"; do
        filter=()
        [[ -n ${only[$suite]:-} ]] && filter=(--only "${only[$suite]}")
        if [[ $suite == attention || $suite == scaling || $suite == models ]]; then
            for name in $("$build/bench/bench_$suite" --list "${filter[@]}"); do
                echo "round $round/$rounds: $name ($((SECONDS - start)) s)" >&2
                run_side lumen "$suite" --only "$name"
                run_side torch "$suite" --only "$name"
            done
        else
            echo "round $round/$rounds: $suite ($((SECONDS - start)) s)" >&2
            run_side lumen "$suite" "${filter[@]}"
            run_side torch "$suite" "${filter[@]}"
        fi
    done
done

# ---- summary and plots ----
mkdir -p "$out"
stem="$out/${MACHINE:-$(hostname)}-$(date +%Y-%m-%d)"
[[ $cuda == ON ]] && stem+="-cuda"
[[ $quick == 1 ]] && stem+="-quick"
[[ $quick == 0 && -n $names ]] && stem+="-partial"
touch "$work/lumen.jsonl" "$work/torch.jsonl"
"$python" "$root/bench/summarize.py" "$work/lumen.jsonl" "$work/torch.jsonl" "$stem" \
    "$threads" "$((SECONDS - start))"
# The plots need the attention and scaling suites: a run of other suites alone leaves them.
if [[ $quick == 0 && -z $names && " ${present[*]} " == *" attention "* ]]; then
    plots=$root/docs
    [[ $cuda == ON ]] && plots+=/cuda
    "$python" "$root/bench/plot.py" "$stem.json" "$plots"
fi
