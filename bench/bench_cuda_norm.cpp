// bench_cuda_norm: lumen's CUDA normalization kernels on the workloads of
// bench/torch_cuda_norm.py: layer_norm and rms_norm on (64 * 1024, 256) and (4096, 1024)
// float32, forward and forward + backward (input, weight, bias gradients), and batch_norm in
// training on (32, 64, 56, 56). GB/s counts the ideal traffic: forward reads x and writes y
// (2 passes), forward + backward adds reading x and dy and writing dx (5 passes). Checks one
// small case against the CPU first. Exits with a message without a GPU.
// Usage: bench_cuda_norm [--repeats R]
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "lumen/lumen.h"

using namespace lumen;
using namespace lumen::bench;

namespace {

// y = f(x, w, b) for the layer workloads.
using NormFn = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;

// Largest |cuda - cpu| of the output and the input gradient on a small problem.
double max_error(const NormFn& f, const Shape& shape, int64_t params) {
    Tensor x = randn(shape), w = rand({params}), b = randn({params}), g = randn(shape);
    Tensor grads[2];
    Tensor outs[2];
    for (int d = 0; d < 2; ++d) {
        Device device = d == 0 ? Device::cpu() : Device::cuda();
        Tensor xl = x.to(device).detach().requires_grad_();
        outs[d] = f(xl, w.to(device), b.to(device));
        outs[d].backward(g.to(device));
        grads[d] = xl.grad();
        outs[d] = outs[d].detach();
    }
    return std::max(difference(outs[1], outs[0]).error, difference(grads[1], grads[0]).error);
}

// Forward, then forward + backward (gradients of x, w and b) of y = f(x, w, b) on the GPU;
// GB/s over `bytes` per pass of x: 2 passes forward, 5 with the backward.
void time_norm(const std::string& name, const NormFn& f, const Tensor& x, const Tensor& w,
               const Tensor& b, const Tensor& g, double bytes, int repeats) {
    double s = gpu_seconds([&] { f(x, w, b); }, repeats);
    report(name + " fwd", "GB/s", 2 * bytes / s / 1e9, s);
    Tensor xl = x.detach().requires_grad_(), wl = w.detach().requires_grad_();
    Tensor bl = b.detach().requires_grad_();
    s = gpu_seconds(
        [&] {
            xl.set_grad(Tensor());
            wl.set_grad(Tensor());
            bl.set_grad(Tensor());
            f(xl, wl, bl).backward(g);
        },
        repeats);
    report(name + " fwd+bwd", "GB/s", 5 * bytes / s / 1e9, s);
}

void bench_rows(const std::string& name, const NormFn& f, int64_t rows, int64_t length,
                int repeats) {
    Tensor x = randn({rows, length}).cuda(), g = randn({rows, length}).cuda();
    Tensor w = rand({length}).cuda(), b = randn({length}).cuda();
    std::string shape = " (" + std::to_string(rows) + ", " + std::to_string(length) + ") float32";
    time_norm("cuda " + name + shape, f, x, w, b, g, 4.0 * double(rows * length), repeats);
}

void bench_batch_norm(int repeats) {
    const Shape shape = {32, 64, 56, 56};
    Tensor x = randn(shape).cuda(), g = randn(shape).cuda();
    Tensor w = rand({64}).cuda(), b = randn({64}).cuda();
    Tensor mean = zeros({64}, DType::float32, Device::cuda());
    Tensor var = ones({64}, DType::float32, Device::cuda());
    NormFn f = [&](const Tensor& in, const Tensor& weight, const Tensor& bias) {
        return batch_norm(in, mean, var, weight, bias, true);
    };
    time_norm("cuda batch_norm training (32, 64, 56, 56) float32", f, x, w, b, g,
              4.0 * double(shape_numel(shape)), repeats);
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    if (!start_cuda_bench("bench_cuda_norm", options)) return 0;
    NormFn layer = [](const Tensor& x, const Tensor& w, const Tensor& b) {
        return layer_norm(x, {x.size(-1)}, w, b);
    };
    NormFn rms = [](const Tensor& x, const Tensor& w, const Tensor&) {
        return rms_norm(x, {x.size(-1)}, w, 1e-6);
    };
    std::printf("# check vs CPU, max |difference| of y and dx: layer_norm %.2e, rms_norm %.2e\n",
                max_error(layer, {64, 256}, 256), max_error(rms, {64, 256}, 256));
    for (auto [rows, length] : {std::pair<int64_t, int64_t>{64 * 1024, 256}, {4096, 1024}}) {
        bench_rows("layer_norm", layer, rows, length, options.repeats);
        bench_rows("rms_norm", rms, rows, length, options.repeats);
    }
    bench_batch_norm(options.repeats);
    return 0;
}
