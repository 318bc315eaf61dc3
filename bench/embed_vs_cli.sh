#!/usr/bin/env bash
# The embedding benchmark: the same training run by the `lumen` binary and by bench_embed, a
# program of its own that links lumen (bench/bench_embed.cpp), on a quiet machine and on a busy
# one (LOAD busy-looping processes beside it). An embedded lumen must be as fast as the binary:
# the ratio embed / CLI should be 1 within noise in both rows. Prints a Markdown table.
#
# Usage: bash bench/embed_vs_cli.sh [BUILD_DIR]   (default build-bench; needs the targets
#        lumen_cli and bench_embed, and Fashion-MNIST at /usr/share/datasets/fashion-mnist)
# Environment: LOAD (busy-looping processes in the busy row; default one per core), RUNS (3: the best train time of each is kept),
#   CONFIG (configs/dgsa/vit_fmnist_tiny.json), SUBSET (8000 training images, one epoch).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-bench}
config=${CONFIG:-$root/configs/dgsa/vit_fmnist_tiny.json}
runs=${RUNS:-3}
load=${LOAD:-$(nproc)}
subset=${SUBSET:-8000}
for binary in "$build/lumen" "$build/bench/bench_embed"; do
    [ -x "$binary" ] || { echo "embed_vs_cli.sh: $binary is missing (build lumen_cli and bench_embed)" >&2; exit 1; }
done
work=$(mktemp -d)
busy_pids=()
cleanup() {
    for pid in "${busy_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# The training seconds (summary.json's train_seconds) of one run of PROGRAM.
train_seconds() {
    local program=$1 dir
    dir=$(mktemp -d "$work/run.XXXX")
    "$program" train "$config" --set train.epochs=1 --set data.train_subset="$subset" \
        --set output.runs_dir="$dir" >"$dir/log" 2>&1 || { cat "$dir/log" >&2; exit 1; }
    /usr/bin/python3 -c 'import json, sys, glob
print(json.load(open(glob.glob(sys.argv[1] + "/*/summary.json")[0]))["train_seconds"])' "$dir"
}

# The best of RUNS alternating runs of the binary and the embedding program: "cli embed".
best_pair() {
    local cli=1e9 embed=1e9 t
    for _ in $(seq "$runs"); do
        t=$(train_seconds "$build/lumen");             cli=$(/usr/bin/python3 -c "print(min($cli, $t))")
        t=$(train_seconds "$build/bench/bench_embed"); embed=$(/usr/bin/python3 -c "print(min($embed, $t))")
    done
    echo "$cli $embed"
}

row() {
    local name=$1 cli embed
    read -r cli embed < <(best_pair)
    /usr/bin/python3 -c "import sys; c, e = float(sys.argv[2]), float(sys.argv[3])
print(f'| {sys.argv[1]} | {c:.2f} s | {e:.2f} s | {e / c:.2f} |')" "$name" "$cli" "$embed"
}

echo "Training $(basename "$config" .json), one epoch of $subset images, $(nproc) cores, best of $runs:"
echo
echo "| machine | lumen binary | embedding program | embed / binary |"
echo "|---|---|---|---|"
row "quiet"
for _ in $(seq "$load"); do
    bash -c 'while :; do :; done' &
    busy_pids+=($!)
done
row "busy ($load busy-looping processes)"
