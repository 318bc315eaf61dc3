#!/usr/bin/python3
"""The workloads of bench/bench_ops.cpp in PyTorch (issue 3's speed goals), printed in the same
JSON-lines format. Every workload is forward + backward with autograd, as in training:
dense and depthwise 3x3 conv2d; layer_norm, softmax and GELU on (64, 1024, 256); the Mamba
selective scan (a sequential reference: PyTorch has no fused CPU kernel) and the Hyena FFT
long convolution for L = 1k..16k tokens. Entries conv3x3_b8_c64_56, dwconv3x3_b8_c256_56,
<op>_64x1024x256, selective_scan_l<L>, fftconv_l<L>.
Usage: torch_ops.py [--threads N] [--repeats R] [--only names]
"""
from torch_util import (PYTHON_SCAN_MAX_TOKENS, SLOW_SCAN, causal_fft_conv, fwd_bwd,
                        median_seconds, parse_args, report, report_skip, selected, selective_scan)

ARGS = parse_args(__doc__)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(ARGS.threads)
SCAN_LENGTHS = (1024, 2048, 4096, 8192, 16384)


def bench_conv(repeats):
    torch.manual_seed(0)
    x = torch.randn(8, 64, 56, 56, requires_grad=True)
    w = torch.randn(64, 64, 3, 3, requires_grad=True)
    if selected(ARGS, "conv3x3_b8_c64_56"):
        s = median_seconds(fwd_bwd(lambda: F.conv2d(x, w, None, 1, 1), [x, w]), 2, repeats)
        report("conv3x3_b8_c64_56", "GFLOP/s", 3 * 2 * 8 * 64 * 64 * 9 * 56 * 56 / s / 1e9, s)
    if not selected(ARGS, "dwconv3x3_b8_c256_56"):
        return
    x = torch.randn(8, 256, 56, 56, requires_grad=True)
    w = torch.randn(256, 1, 3, 3, requires_grad=True)
    s = median_seconds(fwd_bwd(lambda: F.conv2d(x, w, None, 1, 1, 1, 256), [x, w]), 2, repeats)
    report("dwconv3x3_b8_c256_56", "GFLOP/s",
           3 * 2 * 8 * 256 * 9 * 56 * 56 / s / 1e9, s)


def bench_rowwise(repeats):
    torch.manual_seed(0)
    x = torch.randn(64, 1024, 256, requires_grad=True)
    w = torch.randn(256, requires_grad=True)
    b = torch.randn(256, requires_grad=True)
    # Minimum traffic: forward reads x, writes y; backward reads x (or y) and dy, writes dx.
    traffic = 5 * 4 * x.numel()
    cases = [("layer_norm", lambda: F.layer_norm(x, (256,), w, b), [x, w, b]),
             ("softmax", lambda: torch.softmax(x, -1), [x]),
             ("gelu", lambda: F.gelu(x), [x])]
    for name, make, inputs in cases:
        if not selected(ARGS, f"{name}_64x1024x256"):
            continue
        s = median_seconds(fwd_bwd(make, inputs), 2, repeats)
        report(f"{name}_64x1024x256", "GB/s", traffic / s / 1e9, s)


def bench_long(repeats):
    torch.manual_seed(0)
    channels, state = 64, 16
    for length in SCAN_LENGTHS:
        if not selected(ARGS, f"selective_scan_l{length}"):
            continue
        if length > PYTHON_SCAN_MAX_TOKENS:
            report_skip(f"selective_scan_l{length}", "ktok/s", SLOW_SCAN)
            continue
        u = torch.randn(1, channels, length, requires_grad=True)
        delta = torch.randn(1, channels, length, requires_grad=True)
        A = (-torch.rand(channels, state)).requires_grad_()
        Bm = torch.randn(1, state, length, requires_grad=True)
        Cm = torch.randn(1, state, length, requires_grad=True)
        D = torch.randn(channels, requires_grad=True)
        inputs = [u, delta, A, Bm, Cm, D]
        s = median_seconds(fwd_bwd(lambda: selective_scan(*inputs), inputs), 0,
                           max(1, repeats // 4))
        report(f"selective_scan_l{length}", "ktok/s", length / s / 1e3, s)
    for length in SCAN_LENGTHS:
        if not selected(ARGS, f"fftconv_l{length}"):
            continue
        u = torch.randn(2, channels, length, requires_grad=True)
        k = torch.randn(channels, length, requires_grad=True)
        D = torch.randn(channels, requires_grad=True)
        s = median_seconds(fwd_bwd(lambda: causal_fft_conv(u, k, D), [u, k, D]), 1, repeats)
        report(f"fftconv_l{length}", "Mtok/s", 2 * length / s / 1e6, s)


def main():
    print(f"# torch {torch.__version__} torch_ops, {torch.get_num_threads()} threads, "
          f"median of {ARGS.repeats} repeats", flush=True)
    bench_conv(ARGS.repeats)
    bench_rowwise(ARGS.repeats)
    bench_long(ARGS.repeats)


if __name__ == "__main__":
    main()
