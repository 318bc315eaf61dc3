// bench_cuda_blas: lumen's cuBLAS GEMMs and CUDA convolutions on the workloads of
// bench/torch_cuda_blas.py (issue 4's goals: FP32 and TF32 GEMM >= 0.95x PyTorch, depthwise
// 3x3 >= 1.0x, dense conv 3x3 >= 0.5x cuDNN): SGEMM 4096^3 in FP32 and TF32, a batched
// attention-like GEMM, bf16 GEMM 4096^3, conv2d 3x3 64->64 and depthwise 3x3 on 56x56, forward
// and forward + backward. Each result is checked against the CPU first. Exits without a GPU.
// Usage: bench_cuda_blas [--repeats R]
#include <cstdio>
#include <string>

#include "bench/bench_util.h"
#include "lumen/lumen.h"

using namespace lumen;
using namespace lumen::bench;

namespace {

// The largest |got - want| relative to the largest |want|, printed as a comment line.
void check(const std::string& name, const Tensor& got, const Tensor& want) {
    Difference d = difference(got, want);
    std::printf("# check %s: max error %.3g relative to max |value| %.3g\n", name.c_str(),
                d.scale > 0 ? d.error / d.scale : d.error, d.scale);
}

// a @ b for a (4096, 4096) and b (4096, 4096) in `dtype`; TF32 per `tf32`.
void bench_gemm(const std::string& name, DType dtype, bool tf32, int repeats) {
    const int64_t n = 4096;
    set_matmul_allow_tf32(tf32);
    Tensor a = rand({n, n}, DType::float32).to(dtype), b = rand({n, n}, DType::float32).to(dtype);
    Tensor a_gpu = a.cuda(), b_gpu = b.cuda();
    // First 16 rows against the CPU in float32.
    Tensor rows = a.narrow(0, 0, 16).to(DType::float32);
    check(name, matmul(a_gpu, b_gpu).narrow(0, 0, 16), matmul(rows, b.to(DType::float32)));
    double s = gpu_seconds([&] { matmul(a_gpu, b_gpu); }, repeats);
    report(name, "TFLOP/s", 2.0 * n * n * n / s / 1e12, s);
    set_matmul_allow_tf32(false);
}

// 64 x (512 x 64) @ (64 x 512): the scores of 64 attention heads, q @ k^T with k read in place.
void bench_batched(int repeats) {
    Tensor q = rand({64, 512, 64}, DType::float32), k = rand({64, 512, 64}, DType::float32);
    Tensor q_gpu = q.cuda(), k_gpu = k.cuda();
    check("cuda bmm", matmul(q_gpu, k_gpu.transpose(-1, -2)).narrow(0, 0, 2),
          matmul(q.narrow(0, 0, 2), k.narrow(0, 0, 2).transpose(-1, -2)));
    double s = gpu_seconds([&] { matmul(q_gpu, k_gpu.transpose(-1, -2)); }, repeats);
    report("cuda bmm 64x512x512x64 float32", "TFLOP/s", 2.0 * 64 * 512 * 512 * 64 / s / 1e12, s);
}

// Forward, then forward + backward (grads of x, weight and bias) of one convolution.
// `flops` per forward (0: report GB/s over `bytes` instead, forward and 3x for both).
void bench_conv(const std::string& name, const Shape& x_shape, const Shape& w_shape, int64_t groups,
                double flops, double bytes, int repeats) {
    Tensor x = rand(x_shape, DType::float32), w = rand(w_shape, DType::float32);
    Tensor b = rand({w_shape[0]}, DType::float32);
    Tensor xc = x.narrow(0, 0, 2);
    check(name, conv2d(xc.cuda(), w.cuda(), b.cuda(), {1}, {1}, {1}, groups),
          conv2d(xc, w, b, {1}, {1}, {1}, groups));
    Tensor x_gpu = x.cuda().requires_grad_(), w_gpu = w.cuda().requires_grad_();
    Tensor b_gpu = b.cuda().requires_grad_();
    Tensor y = conv2d(x_gpu, w_gpu, b_gpu, {1}, {1}, {1}, groups);
    Tensor g = rand(y.shape(), DType::float32).cuda();
    double s = gpu_seconds(
        [&] {
            NoGradGuard no_grad;
            conv2d(x_gpu, w_gpu, b_gpu, {1}, {1}, {1}, groups);
        },
        repeats);
    if (flops > 0)
        report(name + " fwd", "TFLOP/s", flops / s / 1e12, s);
    else
        report(name + " fwd", "GB/s", bytes / s / 1e9, s);
    s = gpu_seconds(
        [&] {
            for (Tensor* t : {&x_gpu, &w_gpu, &b_gpu}) t->set_grad(Tensor());
            conv2d(x_gpu, w_gpu, b_gpu, {1}, {1}, {1}, groups).backward(g);
        },
        repeats);
    // backward: grad_x and grad_w each cost one forward's multiply-adds (and traffic)
    if (flops > 0)
        report(name + " fwd+bwd", "TFLOP/s", 3 * flops / s / 1e12, s);
    else
        report(name + " fwd+bwd", "GB/s", 3 * bytes / s / 1e9, s);
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    if (!start_cuda_bench("bench_cuda_blas", options)) return 0;
    int repeats = options.repeats;
    bench_gemm("cuda sgemm 4096 float32", DType::float32, false, repeats);
    bench_gemm("cuda sgemm 4096 tf32", DType::float32, true, repeats);
    bench_batched(repeats);
    bench_gemm("cuda gemm 4096 bfloat16", DType::bfloat16, false, repeats);
    // conv2d 3x3, N = 32, 64 -> 64 channels, 56x56, padding 1: 2 N Co Ci 9 H W flops.
    double dense = 2.0 * 32 * 64 * 64 * 9 * 56 * 56;
    bench_conv("cuda conv2d 3x3 64->64 56x56 n32 float32", {32, 64, 56, 56}, {64, 64, 3, 3}, 1,
               dense, 0, repeats);
    // depthwise 3x3, N = 32, C = 256, 56x56: forward reads x and writes y (float32).
    double planes = 4.0 * 32 * 256 * 56 * 56;
    bench_conv("cuda depthwise 3x3 c256 56x56 n32 float32", {32, 256, 56, 56}, {256, 1, 3, 3}, 256,
               0, 2 * planes, repeats);
    print_cuda_memory_stats();
    return 0;
}
