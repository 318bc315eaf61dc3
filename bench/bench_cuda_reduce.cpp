// bench_cuda_reduce: lumen's CUDA softmax and sums on the workloads of
// bench/torch_cuda_reduce.py (issue 4's goal: softmax >= 0.9x PyTorch). softmax along the last
// dim of 4096 x 1024 and 65536 x 256 float32, forward and forward + backward; sums of a 64M
// float32 tensor over the last dim, over a leading dim and over everything. Each result is
// first checked against the CPU. Exits with a message without a GPU.
// Usage: bench_cuda_reduce [--repeats R]
#include <cstdio>

#include "bench/bench_util.h"
#include "lumen/lumen.h"

using namespace lumen;
using namespace lumen::bench;

namespace {

// Largest |got - want| relative to max(1, max |want|), with got from the GPU.
double max_error(const Tensor& got, const Tensor& want) { return difference(got, want).relative(); }

void bench_softmax(int64_t rows, int64_t length, int repeats) {
    Tensor host = mul(rand({rows, length}, DType::float32), 8.0);
    Tensor x = host.cuda(), g = rand({rows, length}, DType::float32).cuda();
    std::string shape = std::to_string(rows) + "x" + std::to_string(length);
    std::printf("# check softmax %s: max relative error %.2e\n", shape.c_str(),
                max_error(softmax(x, -1), softmax(host, -1)));
    double bytes = 4.0 * double(rows * length);
    double s = gpu_seconds([&] { softmax(x, -1); }, repeats);
    report("cuda softmax " + shape + " float32 fwd", "GB/s", 2 * bytes / s / 1e9, s);
    Tensor leaf = x.detach().requires_grad_();
    s = gpu_seconds(
        [&] {
            leaf.set_grad(Tensor());
            softmax(leaf, -1).backward(g);
        },
        repeats);
    // forward reads x, writes y; backward reads y and g, writes dx
    report("cuda softmax " + shape + " float32 fwd+bwd", "GB/s", 5 * bytes / s / 1e9, s);
}

void bench_sums(int repeats) {
    const int64_t rows = 65536, columns = 1024;  // 64M elements
    Tensor host = rand({rows, columns}, DType::float32);
    Tensor x = host.cuda();
    std::printf("# check sums: max relative error %.2e (last dim), %.2e (dim 0), %.2e (all)\n",
                max_error(sum(x, {1}), sum(host, {1})), max_error(sum(x, {0}), sum(host, {0})),
                max_error(sum(x), sum(host)));
    double bytes = 4.0 * double(rows * columns);
    double s = gpu_seconds([&] { sum(x, {1}); }, repeats);
    report("cuda sum 65536x1024 float32 over dim 1", "GB/s", bytes / s / 1e9, s);
    s = gpu_seconds([&] { sum(x, {0}); }, repeats);
    report("cuda sum 65536x1024 float32 over dim 0", "GB/s", bytes / s / 1e9, s);
    s = gpu_seconds([&] { sum(x); }, repeats);
    report("cuda sum 64M float32 (all)", "GB/s", bytes / s / 1e9, s);
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    if (!start_cuda_bench("bench_cuda_reduce", options)) return 0;
    bench_softmax(4096, 1024, options.repeats);
    bench_softmax(64 * 1024, 256, options.repeats);
    bench_sums(options.repeats);
    return 0;
}
