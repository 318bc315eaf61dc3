#!/usr/bin/python3
"""The workloads of bench/bench_cuda_scan.cpp in PyTorch on the GPU, in the same JSON-lines
format: the Mamba selective scan (B = 1, D = 256, N = 16) as the sequential Python loop of
shared/oracle/ref_context.py (PyTorch has no fused scan; reimplemented here, not imported, so
that the bench needs no file outside the repository) and the Hyena FFT convolution (B = 2,
H = 64) through torch.fft, forward + backward for L = 1k..16k, float32. The Python loop runs
at most 3 timed repeats after one warm-up: one step costs seconds at L = 16k.
Usage: torch_cuda_scan.py [--repeats R]
"""
from torch_util import median_seconds, parse_args, report

ARGS = parse_args(__doc__)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

LENGTHS = (1024, 2048, 4096, 8192, 16384)


def fwd_bwd(make_output, inputs):
    """A body that runs the forward, back-propagates a fixed gradient and waits for the GPU."""
    grad = []

    def body():
        for t in inputs:
            t.grad = None
        y = make_output()
        if not grad:
            grad.append(torch.randn_like(y))
        y.backward(grad[0])
        torch.cuda.synchronize()
    return body


def selective_scan(u, delta, A, Bm, Cm, D):
    """ref_context.selective_scan with delta_softplus=True and no delta_bias."""
    delta = F.softplus(delta)
    h = u.new_zeros(u.shape[0], u.shape[1], A.shape[1])
    ys = []
    for t in range(u.shape[2]):
        dt = delta[:, :, t, None]
        h = torch.exp(dt * A) * h + dt * Bm[:, None, :, t] * u[:, :, t, None]
        ys.append((h * Cm[:, None, :, t]).sum(-1))
    return torch.stack(ys, dim=-1) + u * D[:, None]


def causal_fft_conv(u, k, D):
    """ref_context.causal_fft_conv: FFT size 2L, no wrap-around."""
    n = 2 * u.shape[-1]
    y = torch.fft.irfft(torch.fft.rfft(u, n=n) * torch.fft.rfft(k, n=n), n=n)[..., :u.shape[-1]]
    return y + u * D[:, None]


def leaves(*tensors):
    return [t.cuda().requires_grad_() for t in tensors]


def main():
    if not torch.cuda.is_available():
        print("# torch_cuda_scan: no CUDA device")
        return
    print(f"# torch {torch.__version__} torch_cuda_scan, median of {ARGS.repeats} repeats "
          f"(the scan loop: at most 3)", flush=True)
    torch.manual_seed(0)
    channels, state = 256, 16
    for length in LENGTHS:
        inputs = leaves(torch.randn(1, channels, length), torch.randn(1, channels, length),
                        -torch.rand(channels, state), torch.randn(1, state, length),
                        torch.randn(1, state, length), torch.randn(channels))
        s = median_seconds(fwd_bwd(lambda: selective_scan(*inputs), inputs), 1,
                           min(3, ARGS.repeats))
        report(f"cuda selective_scan B=1 D=256 N=16 L={length} fwd+bwd", "ktok/s",
               length / s / 1e3, s)
    for length in LENGTHS:
        inputs = leaves(torch.randn(2, 64, length), torch.randn(64, length), torch.randn(64))
        s = median_seconds(fwd_bwd(lambda: causal_fft_conv(*inputs), inputs), 3, ARGS.repeats)
        report(f"cuda fftconv B=2 H=64 L={length} fwd+bwd", "Mtok/s", 2 * length / s / 1e6, s)


if __name__ == "__main__":
    main()
