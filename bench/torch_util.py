"""Timing and reporting shared by the bench/torch_*.py scripts, in the JSON-lines format of
bench/bench_util.h, and the pieces several of them run (GPU timing, forward + backward bodies,
the long-sequence references). Import it before torch: parse_args fixes the thread count
first; the functions that need torch import it when called."""
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


def start_cuda_bench(name, args, note=""):
    """torch, imported now, after parse_args, with the bench's opening line printed. Without
    PyTorch or without a CUDA device it says so and exits 0, as the lumen benches do."""
    try:
        import torch
    except ImportError:
        print(f"# {name}: PyTorch is not installed")
        raise SystemExit(0)
    if not torch.cuda.is_available():
        print(f"# {name}: no CUDA device")
        raise SystemExit(0)
    print(f"# torch {torch.__version__} {name}, median of {args.repeats} repeats{note}",
          flush=True)
    return torch


def gpu_seconds(body, repeats, warmup=3):
    """Median seconds of a GPU workload: every run, warm-ups included, waits for the device."""
    import torch

    def synced():
        body()
        torch.cuda.synchronize()
    return median_seconds(synced, warmup, repeats)


def fwd_bwd(make_output, inputs):
    """A body that clears the inputs' gradients, runs the forward and back-propagates a fixed
    random gradient (drawn on the first run, so that every run does the same work)."""
    import torch
    grad = []

    def body():
        for t in inputs:
            t.grad = None
        y = make_output()
        if not grad:
            grad.append(torch.randn_like(y))
        y.backward(grad[0])
    return body


def selective_scan(u, delta, A, Bm, Cm, D):
    """The sequential Mamba scan of shared/oracle/ref_context.py with delta_softplus=True and no
    delta_bias (PyTorch has no fused kernel; reimplemented so that bench/ needs no other file)."""
    import torch
    delta = torch.nn.functional.softplus(delta)
    h = u.new_zeros(u.shape[0], u.shape[1], A.shape[1])
    ys = []
    for t in range(u.shape[2]):
        dt = delta[:, :, t, None]
        h = torch.exp(dt * A) * h + dt * Bm[:, None, :, t] * u[:, :, t, None]
        ys.append((h * Cm[:, None, :, t]).sum(-1))
    return torch.stack(ys, dim=-1) + u * D[:, None]


def causal_fft_conv(u, k, D):
    """ref_context.causal_fft_conv, the Hyena long convolution: FFT size 2L, no wrap-around."""
    import torch
    n = 2 * u.shape[-1]
    y = torch.fft.irfft(torch.fft.rfft(u, n=n) * torch.fft.rfft(k, n=n), n=n)[..., :u.shape[-1]]
    return y + u * D[:, None]
