#!/usr/bin/python3
"""The workloads of bench/bench_cuda_blas.cpp in PyTorch on the GPU, in the same JSON-lines
format: SGEMM 4096^3 in FP32 (allow_tf32 off) and TF32 (on), a batched attention-like GEMM,
bf16 GEMM 4096^3, conv2d 3x3 64->64 and depthwise 3x3 on 56x56 (cuDNN with allow_tf32 off, as
lumen's convolutions are full FP32), forward and forward + backward.
Usage: torch_cuda_blas.py [--repeats R]
"""
from torch_util import gpu_seconds, parse_args, report, start_cuda_bench

ARGS = parse_args(__doc__)
torch = start_cuda_bench("torch_cuda_blas", ARGS)


def bench_gemm(name, dtype, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    n = 4096
    a = torch.rand(n, n, device="cuda").to(dtype)
    b = torch.rand(n, n, device="cuda").to(dtype)
    s = gpu_seconds(lambda: torch.matmul(a, b), ARGS.repeats)
    report(name, "TFLOP/s", 2.0 * n ** 3 / s / 1e12, s)
    torch.backends.cuda.matmul.allow_tf32 = False


def bench_batched():
    q = torch.rand(64, 512, 64, device="cuda")
    k = torch.rand(64, 512, 64, device="cuda")
    s = gpu_seconds(lambda: torch.matmul(q, k.transpose(-1, -2)), ARGS.repeats)
    report("cuda bmm 64x512x512x64 float32", "TFLOP/s", 2.0 * 64 * 512 * 512 * 64 / s / 1e12, s)


def bench_conv(name, x_shape, w_shape, groups, flops, nbytes):
    conv = torch.nn.functional.conv2d
    x = torch.rand(*x_shape, device="cuda", requires_grad=True)
    w = torch.rand(*w_shape, device="cuda", requires_grad=True)
    b = torch.rand(w_shape[0], device="cuda", requires_grad=True)
    g = torch.rand_like(conv(x, w, b, padding=1, groups=groups))

    def forward():
        with torch.no_grad():
            conv(x, w, b, padding=1, groups=groups)

    def step():
        x.grad = w.grad = b.grad = None
        conv(x, w, b, padding=1, groups=groups).backward(g)
    s = gpu_seconds(forward, ARGS.repeats)
    if flops:
        report(name + " fwd", "TFLOP/s", flops / s / 1e12, s)
    else:
        report(name + " fwd", "GB/s", nbytes / s / 1e9, s)
    s = gpu_seconds(step, ARGS.repeats)
    if flops:
        report(name + " fwd+bwd", "TFLOP/s", 3 * flops / s / 1e12, s)
    else:
        report(name + " fwd+bwd", "GB/s", 3 * nbytes / s / 1e9, s)


def main():
    torch.backends.cudnn.allow_tf32 = False  # lumen's convolutions are full FP32
    torch.backends.cudnn.benchmark = True
    bench_gemm("cuda sgemm 4096 float32", torch.float32, False)
    bench_gemm("cuda sgemm 4096 tf32", torch.float32, True)
    bench_batched()
    bench_gemm("cuda gemm 4096 bfloat16", torch.bfloat16, False)
    dense = 2.0 * 32 * 64 * 64 * 9 * 56 * 56
    bench_conv("cuda conv2d 3x3 64->64 56x56 n32 float32", (32, 64, 56, 56), (64, 64, 3, 3), 1,
               dense, 0)
    planes = 4.0 * 32 * 256 * 56 * 56
    bench_conv("cuda depthwise 3x3 c256 56x56 n32 float32", (32, 256, 56, 56), (256, 1, 3, 3),
               256, 0, 2 * planes)


if __name__ == "__main__":
    main()
