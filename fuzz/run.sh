#!/usr/bin/env bash
# Runs every fuzz target (fuzz/build.sh builds them) for SECONDS each (default 600), two at a
# time, from the seed corpus in fuzz/seeds/<target> (the corpus grows in build-fuzz/corpus/);
# inputs up to 64 KiB, at most 2 GB of memory and 20 s per input. Prints each target's
# executions and coverage; a crash, sanitizer report, leak, timeout or out-of-memory leaves
# its input in build-fuzz/findings/<target>/ and fails the run.
# Usage: bash fuzz/run.sh [SECONDS] [target ...]   (FUZZ_DIR)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
out=${FUZZ_DIR:-build-fuzz}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors nifti npy npz image idx config csv)
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

run_one() {
    local target=$1
    mkdir -p "$out/corpus/$target" "$out/findings/$target"
    "$out/fuzz_$target" "$out/corpus/$target" "fuzz/seeds/$target" \
        -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=20 \
        -print_final_stats=1 -artifact_prefix="$out/findings/$target/" \
        >"$out/$target.log" 2>&1
    local status=$?
    local runs cov
    runs=$(grep -m1 'stat::number_of_executed_units' "$out/$target.log" | awk '{print $2}')
    cov=$(grep -E '^#[0-9]+.*cov:' "$out/$target.log" | tail -1 | sed -E 's/.*cov: ([0-9]+).*/\1/')
    if [ $status -eq 0 ]; then
        echo "ok    fuzz_$target: ${runs:-?} executions in ${seconds} s, coverage ${cov:-?}, no finding"
    else
        echo "FAIL  fuzz_$target (status $status): see $out/$target.log and $out/findings/$target/"
        grep -m3 -E 'ERROR|runtime error|SUMMARY|deadly' "$out/$target.log" | sed 's/^/      /'
    fi
    return $status
}

failed=0
pids=()
names=()
for target in "${targets[@]}"; do
    run_one "$target" &
    pids+=($!)
    names+=("$target")
    if [ ${#pids[@]} -ge 2 ]; then
        wait "${pids[0]}" || failed=1
        pids=("${pids[@]:1}")
    fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
[ $failed -eq 0 ] && echo "fuzz/run.sh: no finding" || echo "fuzz/run.sh: FINDINGS"
exit $failed
