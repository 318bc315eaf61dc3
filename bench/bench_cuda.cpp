// bench_cuda: lumen's CUDA kernels on the workloads of bench/torch_cuda.py (issue 4's goals,
// as the kernels arrive): device-to-device copy bandwidth as the reference, out-of-place add
// and GELU forward + backward on 64M float32 elements. Exits with a message without a GPU.
// Usage: bench_cuda [--repeats R]
#include <cstdio>

#include "bench/bench_util.h"
#include "lumen/lumen.h"

using namespace lumen;
using namespace lumen::bench;

namespace {

// Median seconds of a GPU workload: each repeat is synchronized.
double gpu_seconds(const std::function<void()>& body, int repeats) {
    return median_seconds(
        [&] {
            body();
            cuda_synchronize();
        },
        3, repeats);
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    if (!cuda_available()) {
        std::printf("# bench_cuda: no CUDA device (built with CUDA: %s)\n", cuda_built() ? "yes" : "no");
        return 0;
    }
    std::printf("# lumen bench_cuda, median of %d repeats\n", options.repeats);
    const int64_t n = int64_t(1) << 26;
    Tensor a = rand({n}, DType::float32).cuda(), b = rand({n}, DType::float32).cuda();
    Tensor out = empty({n}, DType::float32, Device::cuda());
    double bytes = 4.0 * double(n);
    double s = gpu_seconds([&] { out.copy_(a); }, options.repeats);
    report("cuda copy 64M float32 (d2d)", "GB/s", 2 * bytes / s / 1e9, s);
    s = gpu_seconds([&] { add(a, b); }, options.repeats);
    report("cuda add 64M float32", "GB/s", 3 * bytes / s / 1e9, s);
    Tensor x = a.detach().requires_grad_();
    Tensor g = b;
    s = gpu_seconds(
        [&] {
            x.set_grad(Tensor());
            gelu(x).backward(g);
        },
        options.repeats);
    // forward reads x, writes y; backward reads x and dy, writes dx
    report("cuda gelu 64M float32 fwd+bwd", "GB/s", 5 * bytes / s / 1e9, s);
    cuda::MemoryStats stats = cuda::memory_stats(0);
    std::printf("# allocator: %zu bytes allocated, %zu reserved, peak %zu, %lld cudaMalloc calls\n",
                stats.allocated, stats.reserved, stats.peak_reserved, (long long)stats.segments);
    return 0;
}
