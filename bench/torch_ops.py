#!/usr/bin/python3
"""The workloads of bench/bench_ops.cpp in PyTorch (issue 3's speed goals), printed in the same
JSON-lines format. Every workload is forward + backward with autograd, as in training:
dense and depthwise 3x3 conv2d, a dense 3x3x3 conv3d; layer_norm, softmax and the activations on
(64, 1024, 256); the Mamba selective scan (a sequential reference: PyTorch has no fused CPU
kernel) and the Hyena FFT long convolution for L = 1k..16k tokens. Entries conv3x3_b8_c64_56,
conv3x3x3_b1_c32_32x64x64, dwconv3x3_b8_c256_56, <op>_64x1024x256, selective_scan_l<L>,
fftconv_l<L>. --device cuda runs them on the GPU.
Usage: torch_ops.py [--threads N] [--repeats R] [--only names] [--device cpu|cuda]
"""
from torch_util import (SLOW_SCAN, causal_fft_conv, fwd_bwd, median_seconds, parse_args,
                        python_scan_max_tokens, report, report_skip, selected, selective_scan,
                        start_device)

ARGS = parse_args(__doc__)
torch = start_device("torch_ops")
F = torch.nn.functional

torch.set_num_threads(ARGS.threads)
SCAN_LENGTHS = (1024, 2048, 4096, 8192, 16384)


def leaf(t):
    """An input on the run's device that gradients flow to (bench_ops.cpp's leaf)."""
    return t.to(ARGS.device).requires_grad_()


def bench_conv(repeats):
    torch.manual_seed(0)
    x = leaf(torch.randn(8, 64, 56, 56))
    w = leaf(torch.randn(64, 64, 3, 3))
    if selected(ARGS, "conv3x3_b8_c64_56"):
        s = median_seconds(fwd_bwd(lambda: F.conv2d(x, w, None, 1, 1), [x, w]), 2, repeats)
        report("conv3x3_b8_c64_56", "GFLOP/s", 3 * 2 * 8 * 64 * 64 * 9 * 56 * 56 / s / 1e9, s)
    if selected(ARGS, "conv3x3x3_b1_c32_32x64x64"):
        x3 = leaf(torch.randn(1, 32, 32, 64, 64))
        w3 = leaf(torch.randn(32, 32, 3, 3, 3))
        s = median_seconds(fwd_bwd(lambda: F.conv3d(x3, w3, None, 1, 1), [x3, w3]), 2, repeats)
        report("conv3x3x3_b1_c32_32x64x64", "GFLOP/s",
               3 * 2 * 32 * 32 * 27 * 32 * 64 * 64 / s / 1e9, s)
    if not selected(ARGS, "dwconv3x3_b8_c256_56"):
        return
    x = leaf(torch.randn(8, 256, 56, 56))
    w = leaf(torch.randn(256, 1, 3, 3))
    s = median_seconds(fwd_bwd(lambda: F.conv2d(x, w, None, 1, 1, 1, 256), [x, w]), 2, repeats)
    report("dwconv3x3_b8_c256_56", "GFLOP/s",
           3 * 2 * 8 * 256 * 9 * 56 * 56 / s / 1e9, s)


def bench_rowwise(repeats):
    torch.manual_seed(0)
    x = leaf(torch.randn(64, 1024, 256))
    w = leaf(torch.randn(256))
    b = leaf(torch.randn(256))
    # Minimum traffic: forward reads x, writes y; backward reads x (or y) and dy, writes dx.
    traffic = 5 * 4 * x.numel()
    cases = [("layer_norm", lambda: F.layer_norm(x, (256,), w, b), [x, w, b]),
             ("softmax", lambda: torch.softmax(x, -1), [x]),
             ("gelu", lambda: F.gelu(x), [x]),
             ("leaky_relu", lambda: F.leaky_relu(x, 0.01), [x]),
             ("sigmoid", lambda: torch.sigmoid(x), [x]),
             ("silu", lambda: F.silu(x), [x]),
             ("softplus", lambda: F.softplus(x), [x]),
             ("gelu_tanh", lambda: F.gelu(x, approximate="tanh"), [x]),
             ("tanh", lambda: torch.tanh(x), [x])]
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
        if length > python_scan_max_tokens():
            report_skip(f"selective_scan_l{length}", "ktok/s", SLOW_SCAN)
            continue
        u = leaf(torch.randn(1, channels, length))
        delta = leaf(torch.randn(1, channels, length))
        A = leaf(-torch.rand(channels, state))
        Bm = leaf(torch.randn(1, state, length))
        Cm = leaf(torch.randn(1, state, length))
        D = leaf(torch.randn(channels))
        inputs = [u, delta, A, Bm, Cm, D]
        s = median_seconds(fwd_bwd(lambda: selective_scan(*inputs), inputs), 0,
                           max(1, repeats // 4))
        report(f"selective_scan_l{length}", "ktok/s", length / s / 1e3, s)
    for length in SCAN_LENGTHS:
        if not selected(ARGS, f"fftconv_l{length}"):
            continue
        u = leaf(torch.randn(2, channels, length))
        k = leaf(torch.randn(channels, length))
        D = leaf(torch.randn(channels))
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
