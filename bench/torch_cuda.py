#!/usr/bin/python3
"""The workloads of bench/bench_cuda.cpp in PyTorch on the GPU, in the same JSON-lines format:
device-to-device copy, out-of-place add and GELU forward + backward on 64M float32 elements.
Usage: torch_cuda.py [--repeats R]
"""
from torch_util import gpu_seconds, parse_args, report, start_cuda_bench

ARGS = parse_args(__doc__)
torch = start_cuda_bench("torch_cuda", ARGS)


def main():
    n = 1 << 26
    a, b = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.empty(n, device="cuda")
    nbytes = 4 * n
    s = gpu_seconds(lambda: out.copy_(a), ARGS.repeats)
    report("cuda copy 64M float32 (d2d)", "GB/s", 2 * nbytes / s / 1e9, s)
    s = gpu_seconds(lambda: torch.add(a, b), ARGS.repeats)
    report("cuda add 64M float32", "GB/s", 3 * nbytes / s / 1e9, s)
    x = a.detach().requires_grad_()

    def gelu_step():
        x.grad = None
        torch.nn.functional.gelu(x).backward(b)
    s = gpu_seconds(gelu_step, ARGS.repeats)
    report("cuda gelu 64M float32 fwd+bwd", "GB/s", 5 * nbytes / s / 1e9, s)


if __name__ == "__main__":
    main()
