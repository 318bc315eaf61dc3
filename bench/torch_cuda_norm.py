#!/usr/bin/python3
"""The workloads of bench/bench_cuda_norm.cpp in PyTorch on the GPU, in the same JSON-lines
format: layer_norm and rms_norm on (64 * 1024, 256) and (4096, 1024) float32, forward and
forward + backward (input, weight, bias gradients), and batch_norm in training on
(32, 64, 56, 56). GB/s counts the same ideal traffic (2 passes forward, 5 with the backward).
Usage: torch_cuda_norm.py [--repeats R]
"""
from torch_util import gpu_seconds, parse_args, report, start_cuda_bench

ARGS = parse_args(__doc__)
torch = start_cuda_bench("torch_cuda_norm", ARGS)
import torch.nn.functional as F  # noqa: E402


def bench_rows(name, f, rows, length):
    x = torch.randn(rows, length, device="cuda")
    g = torch.randn(rows, length, device="cuda")
    w = torch.rand(length, device="cuda")
    b = torch.randn(length, device="cuda")
    nbytes = 4 * rows * length
    shape = f" ({rows}, {length}) float32"
    with torch.no_grad():
        s = gpu_seconds(lambda: f(x, w, b), ARGS.repeats)
    report(f"cuda {name}{shape} fwd", "GB/s", 2 * nbytes / s / 1e9, s)
    xl, wl, bl = (t.detach().requires_grad_() for t in (x, w, b))

    def step():
        xl.grad = wl.grad = bl.grad = None
        f(xl, wl, bl).backward(g)
    s = gpu_seconds(step, ARGS.repeats)
    report(f"cuda {name}{shape} fwd+bwd", "GB/s", 5 * nbytes / s / 1e9, s)


def bench_batch_norm():
    shape = (32, 64, 56, 56)
    x = torch.randn(*shape, device="cuda")
    g = torch.randn(*shape, device="cuda")
    w = torch.rand(64, device="cuda")
    b = torch.randn(64, device="cuda")
    mean = torch.zeros(64, device="cuda")
    var = torch.ones(64, device="cuda")
    nbytes = 4 * x.numel()
    name = "cuda batch_norm training (32, 64, 56, 56) float32"
    with torch.no_grad():
        s = gpu_seconds(lambda: F.batch_norm(x, mean, var, w, b, training=True), ARGS.repeats)
    report(f"{name} fwd", "GB/s", 2 * nbytes / s / 1e9, s)
    xl, wl, bl = (t.detach().requires_grad_() for t in (x, w, b))

    def step():
        xl.grad = wl.grad = bl.grad = None
        F.batch_norm(xl, mean, var, wl, bl, training=True).backward(g)
    s = gpu_seconds(step, ARGS.repeats)
    report(f"{name} fwd+bwd", "GB/s", 5 * nbytes / s / 1e9, s)


def main():
    def layer(x, w, b):
        return F.layer_norm(x, (x.shape[-1],), w, b)

    def rms(x, w, b):
        return F.rms_norm(x, (x.shape[-1],), w, 1e-6)
    for rows, length in ((64 * 1024, 256), (4096, 1024)):
        bench_rows("layer_norm", layer, rows, length)
        if hasattr(F, "rms_norm"):  # torch >= 2.4
            bench_rows("rms_norm", rms, rows, length)
    bench_batch_norm()


if __name__ == "__main__":
    main()
