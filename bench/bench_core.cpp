// bench_core: throughput of lumen's core CPU ops on the workloads bench/torch_core.py runs in
// PyTorch: SGEMM at n = 64..4096 (sgemm_<n>), out-of-place float32 add of 16M elements
// (add_16m), softmax forward over (4096, 1024) (softmax_fwd_4096x1024). Checks results against
// naive loops first, then warms up and reports the median of several repeats as one JSON
// object per line (bench/run.sh compares the two). --device cuda: the same on the GPU (FP32
// GEMM through cuBLAS, no TF32), checked against the same loops.
// Usage: bench_core [--threads N] [--repeats R] [--only sgemm_1024,...] [--device cpu|cuda]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "lumen/lumen.h"

using namespace lumen;
using namespace lumen::bench;

namespace {

// Largest |got - want| / (1 + |want|) between a float32 GEMM and a double triple loop.
double gemm_error(int64_t n, int64_t k, int64_t m, Device device) {
    Generator generator(1);
    Tensor a = rand({n, k}, DType::float32, &generator);
    Tensor b = rand({k, m}, DType::float32, &generator);
    std::vector<double> got = matmul(a.to(device), b.to(device)).to_vector<double>();
    std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
    double worst = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) {
            double want = 0;
            for (int64_t p = 0; p < k; ++p) want += av[size_t(i * k + p)] * bv[size_t(p * m + j)];
            double error = std::abs(got[size_t(i * m + j)] - want) / (1 + std::abs(want));
            worst = std::max(worst, error);
        }
    return worst;
}

// Checks add and softmax against plain loops on small inputs; returns an empty string or
// what went wrong.
std::string check_correctness(Device device) {
    double gemm = std::max(gemm_error(67, 45, 31, device), gemm_error(130, 257, 70, device));
    if (gemm > 1e-5) return "matmul differs from the naive loop by " + std::to_string(gemm);
    Generator generator(2);
    Tensor x = randn({37, 53}, DType::float32, &generator);
    Tensor y = randn({37, 53}, DType::float32, &generator);
    std::vector<double> xs = x.to_vector<double>(), ys = y.to_vector<double>();
    std::vector<double> sums = add(x.to(device), y.to(device)).to_vector<double>();
    std::vector<double> probabilities = softmax(x.to(device), -1).to_vector<double>();
    for (size_t i = 0; i < xs.size(); ++i)
        if (std::abs(sums[i] - (xs[i] + ys[i])) > 1e-6)
            return "add is wrong at " + std::to_string(i);
    for (size_t row = 0; row < 37; ++row) {
        double top = *std::max_element(xs.begin() + row * 53, xs.begin() + row * 53 + 53);
        double total = 0;
        for (size_t j = 0; j < 53; ++j) total += std::exp(xs[row * 53 + j] - top);
        for (size_t j = 0; j < 53; ++j) {
            double want = std::exp(xs[row * 53 + j] - top) / total;
            if (std::abs(probabilities[row * 53 + j] - want) > 1e-6)
                return "softmax is wrong in row " + std::to_string(row);
        }
    }
    return "";
}

void bench_sgemm(const Options& options) {
    int repeats = options.repeats;
    for (int64_t n : {64, 128, 256, 512, 1024, 2048, 4096}) {
        if (!selected(options, "sgemm_" + std::to_string(n))) continue;
        Generator generator(3);
        Tensor a = rand({n, n}, DType::float32, &generator).to(options.device);
        Tensor b = rand({n, n}, DType::float32, &generator).to(options.device);
        // Small products are timed 64 at a time (one takes microseconds).
        const int inner = n <= 128 ? 64 : 1;
        double seconds = median_seconds(
                             [&] {
                                 for (int i = 0; i < inner; ++i) matmul(a, b);
                             },
                             n >= 2048 ? 1 : 3, n >= 2048 ? std::max(3, repeats / 2) : repeats) /
                         inner;
        report("sgemm_" + std::to_string(n), "GFLOP/s", 2.0 * double(n * n * n) / seconds / 1e9,
               seconds);
    }
}

void bench_add(int repeats, Device device) {
    int64_t n = int64_t(1) << 24;
    Tensor a = rand({n}, DType::float32).to(device), b = rand({n}, DType::float32).to(device);
    double seconds = median_seconds([&] { add(a, b); }, 3, repeats);
    // Two reads and one write of n float32 values.
    report("add_16m", "GB/s", 3.0 * 4.0 * double(n) / seconds / 1e9, seconds);
}

void bench_softmax(int repeats, Device device) {
    Tensor x = randn({4096, 1024}, DType::float32).to(device);
    double seconds = median_seconds([&] { softmax(x, -1); }, 3, repeats);
    // One read and one write of every element (the minimum traffic).
    report("softmax_fwd_4096x1024", "GB/s", 2.0 * 4.0 * double(x.numel()) / seconds / 1e9, seconds);
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    if (options.threads > 0) set_num_threads(options.threads);
    int repeats = options.repeats;
    NoGradGuard no_grad;
    std::string problem = check_correctness(options.device);
    if (!problem.empty()) {
        std::fprintf(stderr, "bench_core: correctness check failed: %s\n", problem.c_str());
        return 1;
    }
    std::printf("# lumen bench_core on %s, %d threads, median of %d repeats\n",
                options.device.str().c_str(), get_num_threads(), repeats);
    bench_sgemm(options);
    if (selected(options, "add_16m")) bench_add(repeats, options.device);
    if (selected(options, "softmax_fwd_4096x1024")) bench_softmax(repeats, options.device);
    return 0;
}
