#!/usr/bin/python3
"""The workloads of bench/bench_cuda_reduce.cpp in PyTorch on the GPU, in the same JSON-lines
format: softmax along the last dim of 4096 x 1024 and 65536 x 256 float32 (forward, forward +
backward) and sums of a 64M float32 tensor over the last dim, a leading dim and everything.
Usage: torch_cuda_reduce.py [--repeats R]
"""
from torch_util import gpu_seconds, parse_args, report, start_cuda_bench

ARGS = parse_args(__doc__)
torch = start_cuda_bench("torch_cuda_reduce", ARGS)


def bench_softmax(rows, length):
    x = torch.rand(rows, length, device="cuda") * 8
    g = torch.rand(rows, length, device="cuda")
    shape = f"{rows}x{length}"
    nbytes = 4 * rows * length
    s = gpu_seconds(lambda: torch.softmax(x, -1), ARGS.repeats)
    report(f"cuda softmax {shape} float32 fwd", "GB/s", 2 * nbytes / s / 1e9, s)
    leaf = x.detach().requires_grad_()

    def step():
        leaf.grad = None
        torch.softmax(leaf, -1).backward(g)
    s = gpu_seconds(step, ARGS.repeats)
    report(f"cuda softmax {shape} float32 fwd+bwd", "GB/s", 5 * nbytes / s / 1e9, s)


def bench_sums():
    x = torch.rand(65536, 1024, device="cuda")
    nbytes = 4 * x.numel()
    s = gpu_seconds(lambda: x.sum(1), ARGS.repeats)
    report("cuda sum 65536x1024 float32 over dim 1", "GB/s", nbytes / s / 1e9, s)
    s = gpu_seconds(lambda: x.sum(0), ARGS.repeats)
    report("cuda sum 65536x1024 float32 over dim 0", "GB/s", nbytes / s / 1e9, s)
    s = gpu_seconds(lambda: x.sum(), ARGS.repeats)
    report("cuda sum 64M float32 (all)", "GB/s", nbytes / s / 1e9, s)


def main():
    bench_softmax(4096, 1024)
    bench_softmax(64 * 1024, 256)
    bench_sums()


if __name__ == "__main__":
    main()
