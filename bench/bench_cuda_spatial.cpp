// bench_cuda_spatial: lumen's CUDA pooling and interpolation on the workloads of
// bench/torch_cuda_spatial.py: max_pool2d 3x3 / 2 with padding 1 on a ResNet stem map and
// bilinear 2x upsampling (align_corners=False) of a decoder map, forward and forward + backward,
// float32. Each result is first checked against the CPU kernels. Exits with a message without
// a GPU. Usage: bench_cuda_spatial [--repeats R]
#include <cstdio>

#include "bench/bench_util.h"
#include "lumen/lumen.h"

using namespace lumen;
using namespace lumen::bench;

namespace {

using Op = std::function<Tensor(const Tensor&)>;

// Checks f's output and gradient against the CPU, then times forward and forward + backward;
// `bytes_forward` / `bytes_both` are the minimal memory traffic of each.
void bench_op(const char* name, const Op& f, const Tensor& host, double bytes_forward,
              double bytes_both, int repeats) {
    Tensor xc = host.detach().requires_grad_();
    Tensor yc = f(xc);
    Tensor gc = rand(yc.shape(), DType::float32);
    yc.backward(gc);
    Tensor x = host.cuda().detach().requires_grad_();
    Tensor g = gc.cuda();
    Tensor y = f(x);
    y.backward(g);
    std::printf("# %s: max |cuda - cpu| output %.3g, gradient %.3g\n", name,
                difference(y, yc).error, difference(x.grad(), xc.grad()).error);
    double s = gpu_seconds(
        [&] {
            NoGradGuard no_grad;
            f(x);
        },
        repeats);
    report(std::string("cuda ") + name + " fwd", "GB/s", bytes_forward / s / 1e9, s);
    s = gpu_seconds(
        [&] {
            x.set_grad(Tensor());
            f(x).backward(g);
        },
        repeats);
    report(std::string("cuda ") + name + " fwd+bwd", "GB/s", bytes_both / s / 1e9, s);
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    if (!start_cuda_bench("bench_cuda_spatial", options)) return 0;
    // (64, 64, 112, 112) -> (64, 64, 56, 56): reads x, writes y and int64 indices; the backward
    // reads grad_out and the indices and writes grad_x.
    Tensor stem = rand({64, 64, 112, 112}, DType::float32);
    double n = double(stem.numel()), m = n / 4;
    bench_op(
        "max_pool2d 3x3/2 (64, 64, 112, 112)",
        [](const Tensor& t) { return max_pool2d(t, {3}, {2}, {1}); }, stem, 4 * n + 12 * m,
        (4 * n + 12 * m) + (12 * m + 4 * n), options.repeats);
    // (32, 64, 64, 64) -> (32, 64, 128, 128): reads x, writes 4x as much; the backward reads
    // grad_out and writes grad_x.
    Tensor decoder = rand({32, 64, 64, 64}, DType::float32);
    double k = double(decoder.numel());
    bench_op(
        "bilinear x2 (32, 64, 64, 64)",
        [](const Tensor& t) { return interpolate(t, {}, {2.0}, "bilinear", false); }, decoder,
        4 * k + 16 * k, (4 * k + 16 * k) + (16 * k + 4 * k), options.repeats);
    return 0;
}
