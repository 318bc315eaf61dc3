// bench_cuda_scan: the long-sequence ops on the GPU, the workloads of bench/torch_cuda_scan.py:
// the Mamba selective scan (B = 1, D = 256, N = 16, softplus, with D) and the Hyena FFT
// convolution (B = 2, H = 64) forward + backward for L = 1k..16k, float32. Each is first
// checked against the CPU kernels at L = 1024. Exits with a message without a GPU.
// Usage: bench_cuda_scan [--repeats R]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "lumen/lumen.h"

using namespace lumen;
using namespace lumen::bench;

namespace {

const std::vector<int64_t> kLengths = {1024, 2048, 4096, 8192, 16384};

// A body that clears the inputs' gradients, runs the forward, back-propagates a fixed random
// gradient and waits for the device.
std::function<void()> fwd_bwd(std::function<Tensor()> forward, std::vector<Tensor> inputs) {
    auto grad = std::make_shared<Tensor>();
    return [forward = std::move(forward), inputs = std::move(inputs), grad] {
        for (const Tensor& input : inputs) input.set_grad(Tensor());
        Tensor y = forward();
        if (!grad->defined()) *grad = randn_like(y);
        y.backward(*grad);
        cuda_synchronize();
    };
}

// max |a - b| / max(1, max |b|) over the CPU copies.
double relative_difference(const Tensor& a, const Tensor& b) {
    std::vector<double> x = a.cpu().to_vector<double>(), y = b.cpu().to_vector<double>();
    double worst = 0, size = 1;
    for (size_t i = 0; i < x.size(); ++i) {
        worst = std::max(worst, std::abs(x[i] - y[i]));
        size = std::max(size, std::abs(y[i]));
    }
    return worst / size;
}

// Scan inputs (u, delta, A, Bm, Cm, D) on `device`, leaves with requires_grad.
std::vector<Tensor> scan_inputs(int64_t length, Device device) {
    Generator generator(1);
    const int64_t channels = 256, state = 16;
    std::vector<Tensor> in = {randn({1, channels, length}, DType::float32, &generator),
                              randn({1, channels, length}, DType::float32, &generator),
                              neg(rand({channels, state}, DType::float32, &generator)),
                              randn({1, state, length}, DType::float32, &generator),
                              randn({1, state, length}, DType::float32, &generator),
                              randn({channels}, DType::float32, &generator)};
    for (Tensor& t : in) t = t.to(device).detach().requires_grad_();
    return in;
}

Tensor scan_of(const std::vector<Tensor>& in) {
    return selective_scan(in[0], in[1], in[2], in[3], in[4], in[5], Tensor(), Tensor(), true);
}

// u (2, 64, L), k (64, L), D (64) on `device`, leaves with requires_grad.
std::vector<Tensor> conv_inputs(int64_t length, Device device) {
    Generator generator(2);
    std::vector<Tensor> in = {randn({2, 64, length}, DType::float32, &generator),
                              randn({64, length}, DType::float32, &generator),
                              randn({64}, DType::float32, &generator)};
    for (Tensor& t : in) t = t.to(device).detach().requires_grad_();
    return in;
}

// The CUDA result and the gradient of the first input against the CPU's.
void check(const char* name, const std::function<Tensor(const std::vector<Tensor>&)>& f,
           const std::vector<Tensor>& cpu_in, const std::vector<Tensor>& gpu_in) {
    Tensor y_cpu = f(cpu_in), y_gpu = f(gpu_in);
    Tensor g = randn_like(y_cpu);
    y_cpu.backward(g);
    y_gpu.backward(g.cuda());
    std::printf("# check %s L=1024: output %.2e, grad %.2e (relative max difference to the CPU)\n",
                name, relative_difference(y_gpu, y_cpu),
                relative_difference(gpu_in[0].grad(), cpu_in[0].grad()));
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    if (!cuda_available()) {
        std::printf("# bench_cuda_scan: no CUDA device (built with CUDA: %s)\n",
                    cuda_built() ? "yes" : "no");
        return 0;
    }
    std::printf("# lumen bench_cuda_scan, median of %d repeats\n", options.repeats);
    check("selective_scan", scan_of, scan_inputs(1024, Device::cpu()),
          scan_inputs(1024, Device::cuda()));
    auto conv = [](const std::vector<Tensor>& in) { return fftconv(in[0], in[1], in[2]); };
    check("fftconv", conv, conv_inputs(1024, Device::cpu()), conv_inputs(1024, Device::cuda()));
    for (int64_t length : kLengths) {
        std::vector<Tensor> in = scan_inputs(length, Device::cuda());
        double s = median_seconds(fwd_bwd([in] { return scan_of(in); }, in), 2, options.repeats);
        report("cuda selective_scan B=1 D=256 N=16 L=" + std::to_string(length) + " fwd+bwd",
               "ktok/s", double(length) / s / 1e3, s);
    }
    for (int64_t length : kLengths) {
        std::vector<Tensor> in = conv_inputs(length, Device::cuda());
        double s = median_seconds(fwd_bwd([in, conv] { return conv(in); }, in), 3, options.repeats);
        report("cuda fftconv B=2 H=64 L=" + std::to_string(length) + " fwd+bwd", "Mtok/s",
               2.0 * double(length) / s / 1e6, s);
    }
    return 0;
}
