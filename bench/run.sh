#!/usr/bin/env bash
# Compares lumen (bench/bench_<suite>.cpp) with PyTorch (bench/torch_<suite>.py) on the same
# workloads in the same run, alternating the two, and writes bench/results/<machine>-<date>.json
# and .md (bench/summarize.py) and, for a full run, the plots in docs/ (bench/plot.py).
# Suites: core, ops, attention, train (when bench/bench_train.cpp exists), scaling. The attention
# and scaling workloads run one per process (fresh peak memory), each under WORKLOAD_TIMEOUT.
#
# Usage: bash bench/run.sh [--quick] [--suites "core ops ..."] [--only NAMES] [--out DIR]
#   --quick   sgemm_1024, attn_mhsa_n1024 and vit_train_step only, 3 repeats (results
#             <machine>-<date>-quick)
#   --only    workloads by name or prefix, e.g. attn_mhsa,sgemm_1024 (results ...-partial)
# Environment: THREADS (all cores), ROUNDS (1: alternations, the best median kept), REPEATS (7),
#   WORKLOAD_TIMEOUT (600 s), BENCH_MEMORY_LIMIT_GB (8), PYTHON (/usr/bin/python3), MACHINE
#   (hostname), BUILD_DIR (build-bench). docs/benchmarks.md explains how to read the results.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quick=0
suites=""
names=""
out=$root/bench/results
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) quick=1 ;;
        --suites) suites=$2; shift ;;
        --only) names=$2; shift ;;
        --out) out=$2; shift ;;
        -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done

build=${BUILD_DIR:-$root/build-bench}
threads=${THREADS:-$(nproc)}
rounds=${ROUNDS:-1}
repeats=${REPEATS:-7}
timeout_s=${WORKLOAD_TIMEOUT:-600}
python=${PYTHON:-/usr/bin/python3}
# Sleeping instead of spinning OpenMP threads: on a busy machine spinning slows small ops down a
# lot; on a quiet one both perform alike (README, "Performance").
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
export PYTHON=$python BENCH_LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
start=$SECONDS

# ---- what to run: suites, and the workloads of each in --quick mode ----
suites=${suites:-core ops attention train scaling}
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
bash "$root/scripts/setup.sh" --bench
# Configured every time: a bench_*.cpp added since the last run is a new target, which the
# build step alone would not know yet (its glob is re-read only while building).
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLUMEN_CUDA=OFF \
    -DLUMEN_BUILD_TESTS=OFF >/dev/null
targets=()
for suite in "${present[@]}"; do targets+=("bench_$suite"); done
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run_side SIDE SUITE [--only NAMES]: one process of one side; its JSON lines go to SIDE.jsonl.
# A workload process that times out or fails is recorded as skipped, with the reason.
run_side() {
    local side=$1 suite=$2 command status=0
    shift 2
    if [[ $side == lumen ]]; then command=("$build/bench/bench_$suite")
    else command=("$python" "$root/bench/torch_$suite.py"); fi
    timeout "$timeout_s" "${command[@]}" --threads "$threads" --repeats "$repeats" "$@" \
        >"$work/out" || status=$?
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
        if [[ $suite == attention || $suite == scaling ]]; then
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
[[ $quick == 1 ]] && stem+="-quick"
[[ $quick == 0 && -n $names ]] && stem+="-partial"
touch "$work/torch.jsonl"
"$python" "$root/bench/summarize.py" "$work/lumen.jsonl" "$work/torch.jsonl" "$stem" \
    "$threads" "$((SECONDS - start))"
if [[ $quick == 0 && -z $names ]]; then
    "$python" "$root/bench/plot.py" "$stem.json" "$root/docs"
fi
