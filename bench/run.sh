#!/usr/bin/env bash
# Compares lumen (bench/bench_<suite>.cpp) with PyTorch (bench/torch_<suite>.py) on the same
# machine in the same run: installs python3-torch and OpenBLAS if missing, builds the bench
# executables, runs each suite of both alternately ROUNDS times, keeps the best median of each
# workload, prints a markdown table and writes it to bench/results/<hostname>-<date>.md/.json.
# Suites: core (SGEMM, add, softmax; issue 2), ops (conv, norms, scan, FFT; issue 3) and
# attention (every attention variant fwd+bwd at N = 196 and 4096, linear-memory checks; issue 5),
# train (a training step of the DGSA paper's Table 3 ViT and DGViT in images/s; issue 7).
# Environment: SUITES (default "core ops"), THREADS (default: all cores), ROUNDS (default 2),
#              REPEATS (default 7), BUILD_DIR (default build-bench), RESULTS_NAME (the results
#              file's name without extension, default <hostname>-<date>).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
threads=${THREADS:-$(nproc)}
rounds=${ROUNDS:-2}
repeats=${REPEATS:-7}
python=/usr/bin/python3

# ---- dependencies (idempotent): PyTorch and OpenBLAS ----
bash "$root/scripts/setup.sh" --bench

# ---- build (configures once; the build step is a no-op when up to date) ----
if [[ ! -f $build/CMakeCache.txt ]]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLUMEN_CUDA=OFF \
        -DLUMEN_BUILD_TESTS=OFF >/dev/null
fi
suites=${SUITES:-core ops}
targets=(); for suite in $suites; do targets+=("bench_$suite"); done
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null

# ---- runs, alternating so that both see the same machine state ----
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for ((round = 1; round <= rounds; ++round)); do
    for suite in $suites; do
        echo "round $round/$rounds: lumen $suite" >&2
        "$build/bench/bench_$suite" --threads "$threads" --repeats "$repeats" | grep '^{' \
            >>"$work/lumen.jsonl"
        echo "round $round/$rounds: pytorch $suite" >&2
        "$python" "$root/bench/torch_$suite.py" --threads "$threads" --repeats "$repeats" |
            grep '^{' >>"$work/torch.jsonl"
    done
done

# ---- summary ----
mkdir -p "$root/bench/results"
stem="$root/bench/results/${RESULTS_NAME:-$(hostname)-$(date +%Y-%m-%d)}"
"$python" - "$work/lumen.jsonl" "$work/torch.jsonl" "$stem" "$threads" <<'EOF'
import json, platform, socket, subprocess, sys, datetime

lumen_file, torch_file, stem, threads = sys.argv[1:5]

def best(path):
    """name -> the row with the highest throughput over all rounds."""
    rows = {}
    for line in open(path):
        row = json.loads(line)
        if row["name"] not in rows or row["value"] > rows[row["name"]]["value"]:
            rows[row["name"]] = row
    return rows

def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()

lumen, torch_rows = best(lumen_file), best(torch_file)
torch_version = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"],
                               capture_output=True, text=True).stdout.strip()
machine = f"{socket.gethostname()}: {cpu_model()}, {subprocess.check_output(['nproc']).decode().strip()} cores"
date = datetime.date.today().isoformat()
results = []
for name, row in lumen.items():
    other = torch_rows.get(name)
    results.append({"name": name, "unit": row["unit"], "lumen": row["value"],
                    "pytorch": other["value"] if other else None,
                    "speedup": round(row["value"] / other["value"], 3) if other else None,
                    "lumen_ms": row["ms"], "pytorch_ms": other["ms"] if other else None})

lines = [f"# lumen vs PyTorch {torch_version} ({machine}, {threads} threads, {date})", "",
         "| workload | lumen | PyTorch | ratio |", "|---|---|---|---|"]
for r in results:
    theirs = f"{r['pytorch']:.1f} {r['unit']} ({r['pytorch_ms']:.2f} ms)" if r["pytorch"] else "n/a"
    ratio = f"{r['speedup']:.2f}" if r["speedup"] else "n/a"
    lines.append(f"| {r['name']} | {r['lumen']:.1f} {r['unit']} ({r['lumen_ms']:.2f} ms) | "
                 f"{theirs} | {ratio} |")
lines += ["", "ratio = lumen throughput / PyTorch throughput (higher is better for lumen); "
          "each figure is the best over rounds of a median over repeats."]
table = "\n".join(lines) + "\n"
print(table)
open(stem + ".md", "w").write(table)
json.dump({"machine": machine, "date": date, "threads": int(threads),
           "pytorch_version": torch_version, "results": results},
          open(stem + ".json", "w"), indent=2)
print(f"wrote {stem}.md and {stem}.json", file=sys.stderr)
EOF
