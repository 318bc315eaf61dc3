// Timing and reporting shared by the bench_* executables: every figure is the median of
// several timed repeats after untimed warm-ups, printed as one JSON object per line in the
// format bench/run.sh pairs with the PyTorch scripts (bench/torch_util.py prints the same).
// Also the pieces every bench_cuda_* repeats: GPU timing, the no-GPU exit, the CPU check.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/storage.h"
#include "core/tensor.h"
#include "ops/random.h"

namespace lumen::bench {

inline double seconds_of(const std::function<void()>& body) {
    auto start = std::chrono::steady_clock::now();
    body();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Median seconds of `repeats` runs after `warmup` untimed ones.
inline double median_seconds(const std::function<void()>& body, int warmup, int repeats) {
    for (int i = 0; i < warmup; ++i) body();
    std::vector<double> times;
    for (int i = 0; i < repeats; ++i) times.push_back(seconds_of(body));
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// One result line; `value` is a throughput (higher is better).
inline void report(const std::string& name, const char* unit, double value, double seconds) {
    std::printf("{\"name\": \"%s\", \"unit\": \"%s\", \"value\": %.3f, \"ms\": %.4f}\n",
                name.c_str(), unit, value, seconds * 1e3);
    std::fflush(stdout);
}

struct Options {
    int threads = 0;  // 0: keep the default
    int repeats = 7;
};

// Reads --threads N and --repeats R.
inline Options parse_options(int argc, char** argv) {
    Options options;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--threads") == 0) options.threads = std::atoi(argv[i + 1]);
        if (std::strcmp(argv[i], "--repeats") == 0)
            options.repeats = std::max(1, std::atoi(argv[i + 1]));
    }
    return options;
}

// ---- autograd and GPU workloads ----

// A body that clears the inputs' gradients, runs the forward and back-propagates a fixed random
// gradient (drawn on the first run, so that every run does the same work).
inline std::function<void()> fwd_bwd(std::function<Tensor()> forward, std::vector<Tensor> inputs) {
    auto grad = std::make_shared<Tensor>();
    return [forward = std::move(forward), inputs = std::move(inputs), grad] {
        for (const Tensor& input : inputs) input.set_grad(Tensor());
        Tensor y = forward();
        if (!grad->defined()) *grad = randn_like(y);
        y.backward(*grad);
    };
}

// Median seconds of a GPU workload: every run, warm-ups included, waits for the device.
inline double gpu_seconds(const std::function<void()>& body, int repeats, int warmup = 3) {
    return median_seconds(
        [&] {
            body();
            cuda_synchronize();
        },
        warmup, repeats);
}

// The opening line of a bench_cuda_* executable. Without a CUDA device it says so and returns
// false (the bench then exits 0, as its PyTorch twin does).
inline bool start_cuda_bench(const char* name, const Options& options) {
    if (!cuda_available()) {
        std::printf("# %s: no CUDA device (built with CUDA: %s)\n", name,
                    cuda_built() ? "yes" : "no");
        return false;
    }
    std::printf("# lumen %s, median of %d repeats\n", name, options.repeats);
    return true;
}

// The caching allocator's counters on device 0, as a comment line.
inline void print_cuda_memory_stats() {
    cuda::MemoryStats stats = cuda::memory_stats(0);
    std::printf("# allocator: %zu bytes allocated, %zu reserved, peak %zu, %lld cudaMalloc calls\n",
                stats.allocated, stats.reserved, stats.peak_reserved, (long long)stats.segments);
}

// How far a result (any device) is from its reference: the largest |got - want| and the
// largest |want|, over two tensors of the same shape.
struct Difference {
    double error = 0, scale = 0;
    // error / max(1, scale): absolute for values below 1, relative above.
    double relative() const { return error / std::max(1.0, scale); }
};

inline Difference difference(const Tensor& got, const Tensor& want) {
    std::vector<double> g = got.cpu().to_vector<double>();
    std::vector<double> w = want.cpu().to_vector<double>();
    Difference d;
    for (size_t i = 0; i < w.size(); ++i) {
        d.error = std::max(d.error, std::abs(g[i] - w[i]));
        d.scale = std::max(d.scale, std::abs(w[i]));
    }
    return d;
}

}  // namespace lumen::bench
