"""Timing and reporting shared by the bench/torch_*.py scripts, in the JSON-lines format of
bench/bench_util.h. Import it before torch: it fixes the thread count first."""
import argparse
import json
import os
import statistics
import time


def parse_args(doc):
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    # PyTorch's BLAS (OpenBLAS here) reads its thread count when it loads: set it before import.
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    return args


def median_seconds(body, warmup, repeats):
    for _ in range(warmup):
        body()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        body()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def report(name, unit, value, seconds):
    print(json.dumps({"name": name, "unit": unit, "value": round(value, 3),
                      "ms": round(seconds * 1e3, 4)}), flush=True)
