#!/usr/bin/python3
"""The workloads of bench/bench_core.cpp in PyTorch, printed in the same JSON-lines format:
SGEMM at n = 64..4096 (sgemm_<n>), out-of-place float32 add of 16M elements (add_16m), softmax
forward over (4096, 1024) (softmax_fwd_4096x1024). Each figure is the median of several timed
repeats after a warm-up.
--device cuda: the same on the GPU (FP32, no TF32).
Usage: torch_core.py [--threads N] [--repeats R] [--only names] [--device cpu|cuda]
"""
import sys

from torch_util import median_seconds, parse_args, report, selected, start_device

ARGS = parse_args(__doc__)
torch = start_device("torch_core")
DEV = ARGS.device

torch.set_num_threads(ARGS.threads)


def check_correctness():
    generator = torch.Generator().manual_seed(1)
    a = torch.rand(67, 45, generator=generator)
    b = torch.rand(45, 31, generator=generator)
    product = torch.matmul(a.to(DEV), b.to(DEV)).cpu()
    error = (product.double() - a.double() @ b.double()).abs().max().item()
    if error > 1e-4:
        sys.exit(f"torch_core: matmul differs from the float64 product by {error}")


def main():
    check_correctness()
    repeats = ARGS.repeats
    print(f"# torch {torch.__version__} torch_core on {DEV}, {torch.get_num_threads()} threads, "
          f"median of {repeats} repeats", flush=True)
    with torch.no_grad():
        for n in (64, 128, 256, 512, 1024, 2048, 4096):
            if not selected(ARGS, f"sgemm_{n}"):
                continue
            a, b = torch.rand(n, n, device=DEV), torch.rand(n, n, device=DEV)
            big = n >= 2048
            inner = 64 if n <= 128 else 1  # small products timed 64 at a time

            def products():
                for _ in range(inner):
                    torch.matmul(a, b)

            seconds = median_seconds(products, 1 if big else 3,
                                     max(3, repeats // 2) if big else repeats) / inner
            report(f"sgemm_{n}", "GFLOP/s", 2.0 * n ** 3 / seconds / 1e9, seconds)

        if selected(ARGS, "add_16m"):
            n = 1 << 24
            a, b = torch.rand(n, device=DEV), torch.rand(n, device=DEV)
            seconds = median_seconds(lambda: torch.add(a, b), 3, repeats)
            report("add_16m", "GB/s", 3 * 4 * n / seconds / 1e9, seconds)

        if selected(ARGS, "softmax_fwd_4096x1024"):
            x = torch.randn(4096, 1024, device=DEV)
            seconds = median_seconds(lambda: torch.softmax(x, -1), 3, repeats)
            report("softmax_fwd_4096x1024", "GB/s", 2 * 4 * x.numel() / seconds / 1e9, seconds)


if __name__ == "__main__":
    main()
