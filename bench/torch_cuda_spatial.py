#!/usr/bin/python3
"""The workloads of bench/bench_cuda_spatial.cpp in PyTorch on the GPU, in the same JSON-lines
format: max_pool2d 3x3 / 2 with padding 1 on (64, 64, 112, 112) and bilinear 2x upsampling
(align_corners=False) of (32, 64, 64, 64), forward and forward + backward, float32.
Usage: torch_cuda_spatial.py [--repeats R]
"""
from torch_util import gpu_seconds, parse_args, report, start_cuda_bench

ARGS = parse_args(__doc__)
torch = start_cuda_bench("torch_cuda_spatial", ARGS)
import torch.nn.functional as F  # noqa: E402


def bench_op(name, f, shape, bytes_forward, bytes_both):
    x = torch.rand(shape, device="cuda", requires_grad=True)
    g = torch.rand_like(f(x))

    def forward():
        with torch.no_grad():
            f(x)
    s = gpu_seconds(forward, ARGS.repeats)
    report(f"cuda {name} fwd", "GB/s", bytes_forward / s / 1e9, s)

    def both():
        x.grad = None
        f(x).backward(g)
    s = gpu_seconds(both, ARGS.repeats)
    report(f"cuda {name} fwd+bwd", "GB/s", bytes_both / s / 1e9, s)


def main():
    n = 64 * 64 * 112 * 112
    m = n / 4
    bench_op("max_pool2d 3x3/2 (64, 64, 112, 112)", lambda t: F.max_pool2d(t, 3, 2, 1),
             (64, 64, 112, 112), 4 * n + 12 * m, (4 * n + 12 * m) + (12 * m + 4 * n))
    k = 32 * 64 * 64 * 64
    bench_op("bilinear x2 (32, 64, 64, 64)",
             lambda t: F.interpolate(t, scale_factor=2.0, mode="bilinear", align_corners=False),
             (32, 64, 64, 64), 20 * k, 40 * k)


if __name__ == "__main__":
    main()
