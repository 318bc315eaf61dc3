#!/usr/bin/python3
"""The workloads of bench/bench_cuda_scan.cpp in PyTorch on the GPU, in the same JSON-lines
format: the Mamba selective scan (B = 1, D = 256, N = 16) as the sequential Python loop of
the reference ref_context.py (PyTorch has no fused scan; torch_util.selective_scan) and the
Hyena FFT convolution (B = 2, H = 64) through torch.fft, forward + backward for L = 1k..16k,
float32. The Python loop runs at most 3 timed repeats after one warm-up: one step costs seconds
at L = 16k.
Usage: torch_cuda_scan.py [--repeats R]
"""
from torch_util import (causal_fft_conv, fwd_bwd, gpu_seconds, parse_args, report,
                        selective_scan, start_cuda_bench)

ARGS = parse_args(__doc__)
torch = start_cuda_bench("torch_cuda_scan", ARGS, " (the scan loop: at most 3)")

LENGTHS = (1024, 2048, 4096, 8192, 16384)


def leaves(*tensors):
    return [t.cuda().requires_grad_() for t in tensors]


def main():
    torch.manual_seed(0)
    channels, state = 256, 16
    for length in LENGTHS:
        inputs = leaves(torch.randn(1, channels, length), torch.randn(1, channels, length),
                        -torch.rand(channels, state), torch.randn(1, state, length),
                        torch.randn(1, state, length), torch.randn(channels))
        s = gpu_seconds(fwd_bwd(lambda: selective_scan(*inputs), inputs), min(3, ARGS.repeats),
                        warmup=1)
        report(f"cuda selective_scan B=1 D=256 N=16 L={length} fwd+bwd", "ktok/s",
               length / s / 1e3, s)
    for length in LENGTHS:
        inputs = leaves(torch.randn(2, 64, length), torch.randn(64, length), torch.randn(64))
        s = gpu_seconds(fwd_bwd(lambda: causal_fft_conv(*inputs), inputs), ARGS.repeats)
        report(f"cuda fftconv B=2 H=64 L={length} fwd+bwd", "Mtok/s", 2 * length / s / 1e6, s)


if __name__ == "__main__":
    main()
