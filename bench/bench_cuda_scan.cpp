// bench_cuda_scan: the long-sequence ops on the GPU, the workloads of bench/torch_cuda_scan.py:
// the Mamba selective scan (B = 1, D = 256, N = 16, softplus, with D) and the Hyena FFT
// convolution (B = 2, H = 64) forward + backward for L = 1k..16k, float32. Each is first
// checked against the CPU kernels at L = 1024. Exits with a message without a GPU.
// Usage: bench_cuda_scan [--repeats R]
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "lumen/lumen.h"

using namespace lumen;
using namespace lumen::bench;

namespace {

const std::vector<int64_t> kLengths = {1024, 2048, 4096, 8192, 16384};

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
                name, difference(y_gpu, y_cpu).relative(),
                difference(gpu_in[0].grad(), cpu_in[0].grad()).relative());
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    if (!start_cuda_bench("bench_cuda_scan", options)) return 0;
    check("selective_scan", scan_of, scan_inputs(1024, Device::cpu()),
          scan_inputs(1024, Device::cuda()));
    auto conv = [](const std::vector<Tensor>& in) { return fftconv(in[0], in[1], in[2]); };
    check("fftconv", conv, conv_inputs(1024, Device::cpu()), conv_inputs(1024, Device::cuda()));
    for (int64_t length : kLengths) {
        std::vector<Tensor> in = scan_inputs(length, Device::cuda());
        double s = gpu_seconds(fwd_bwd([in] { return scan_of(in); }, in), options.repeats, 2);
        report("cuda selective_scan B=1 D=256 N=16 L=" + std::to_string(length) + " fwd+bwd",
               "ktok/s", double(length) / s / 1e3, s);
    }
    for (int64_t length : kLengths) {
        std::vector<Tensor> in = conv_inputs(length, Device::cuda());
        double s = gpu_seconds(fwd_bwd([in, conv] { return conv(in); }, in), options.repeats);
        report("cuda fftconv B=2 H=64 L=" + std::to_string(length) + " fwd+bwd", "Mtok/s",
               2.0 * double(length) / s / 1e6, s);
    }
    return 0;
}
