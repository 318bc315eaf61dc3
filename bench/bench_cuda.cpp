// bench_cuda: lumen's CUDA kernels on the workloads of bench/torch_cuda.py (issue 4's goals,
// as the kernels arrive): device-to-device copy bandwidth as the reference, out-of-place add
// and GELU forward + backward on 64M float32 elements. Exits with a message without a GPU.
// Usage: bench_cuda [--repeats R]
#include <cstdio>

#include "bench/bench_util.h"
#include "lumen/lumen.h"

using namespace lumen;
using namespace lumen::bench;

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    if (!start_cuda_bench("bench_cuda", options)) return 0;
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
    print_cuda_memory_stats();
    return 0;
}
