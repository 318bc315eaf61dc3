#!/usr/bin/env bash
# Runs the hostile-file corpus (make_corpus.cpp): trains a tiny run to have a real checkpoint,
# writes the corpus from it, then runs every case's `lumen` command with a time limit
# (timeout) and a memory limit (prlimit --as, or ASan's hard_rss_limit_mb in a sanitizer
# build) and checks that it ends with the expected status (never a signal, a hang or an
# out-of-memory kill) and prints the expected fragment. Prints one line per case.
# Usage: bash tests/hostile/run_corpus.sh LUMEN_BINARY CORPUS_GENERATOR [SECONDS] [MEMORY_MB]
set -uo pipefail
lumen=$(realpath "$1")
generator=$(realpath "$2")
seconds=${3:-30}
memory_mb=${4:-4096}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/lumen_hostile.XXXXXX")
trap 'rm -rf "$work"' EXIT
export LUMEN_NUM_THREADS=1

cat >"$work/tiny.json" <<JSON
{"name": "tiny", "seed": 1,
 "data": {"dataset": "synthetic", "batch_size": 16, "train_subset": 32, "test_subset": 16,
          "num_workers": 0},
 "model": {"name": "dgvit", "embed_dim": 16, "depth": 1, "num_heads": 2, "patch_size": 7},
 "train": {"epochs": 1, "threads": 1},
 "output": {"progress": "none", "runs_dir": "$work/runs"}}
JSON
"$lumen" train "$work/tiny.json" >"$work/train.log" 2>&1 || { cat "$work/train.log"; exit 1; }
"$generator" "$work/runs/tiny" "$here/../data/oracle/ops/relu.safetensors" "$work/corpus" || exit 1

limit=()
if ldd "$lumen" 2>/dev/null | grep -q libasan || nm -an "$lumen" 2>/dev/null | grep -q __asan_init; then
    export ASAN_OPTIONS="hard_rss_limit_mb=$memory_mb:${ASAN_OPTIONS:-}"
else
    limit=(prlimit --as=$((memory_mb * 1024 * 1024)))
fi

failed=0 total=0
while IFS=$'\t' read -r -a fields; do
    name=${fields[0]} want_status=${fields[1]} expect=${fields[2]}
    args=("${fields[@]:3}")
    total=$((total + 1))
    start=$(date +%s.%N)
    output=$(cd "$work" && timeout --signal=KILL "$seconds" "${limit[@]}" "$lumen" "${args[@]}" 2>&1 </dev/null)
    status=$?
    elapsed=$(printf '%.2f' "$(echo "$(date +%s.%N) - $start" | bc)")
    problem=""
    if [ "$status" -ge 124 ]; then
        problem="ended by a signal or the time limit (status $status)"
    elif [ "$status" -ne "$want_status" ]; then
        problem="exit status $status, expected $want_status"
    elif ! grep -qF -- "$expect" <<<"$output"; then
        problem="output lacks: $expect"
    elif [ "$want_status" -ne 0 ] && ! grep -q '^error: \[\|^FAIL ' <<<"$output"; then
        problem="no 'error: [component]' line"
    fi
    if [ -n "$problem" ]; then
        failed=$((failed + 1))
        echo "FAIL  $name (${elapsed}s): $problem"
        echo "$output" | tail -5 | sed 's/^/      /' | cut -c1-300
    else
        echo "ok    $name (${elapsed}s): $(grep -m1 '^error: \|^FAIL \|^warning: ' <<<"$output" | cut -c1-160)"
    fi
done <"$work/corpus/cases.tsv"
echo "hostile corpus: $((total - failed)) of $total cases refused as expected"
[ "$failed" -eq 0 ]
