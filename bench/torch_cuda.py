#!/usr/bin/python3
"""The workloads of bench/bench_cuda.cpp in PyTorch on the GPU, in the same JSON-lines format:
device-to-device copy, out-of-place add and GELU forward + backward on 64M float32 elements.
Usage: torch_cuda.py [--repeats R]
"""
from torch_util import median_seconds, parse_args, report

ARGS = parse_args(__doc__)
import torch  # noqa: E402


def gpu_seconds(body, repeats):
    def synced():
        body()
        torch.cuda.synchronize()
    return median_seconds(synced, 3, repeats)


def main():
    if not torch.cuda.is_available():
        print("# torch_cuda: no CUDA device")
        return
    print(f"# torch {torch.__version__} torch_cuda, median of {ARGS.repeats} repeats", flush=True)
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
