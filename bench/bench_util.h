// Timing and reporting shared by the bench_* executables: every figure is the median of
// several timed repeats after untimed warm-ups, printed as one JSON object per line in the
// format bench/run.sh pairs with the PyTorch scripts (bench/torch_util.py prints the same);
// workload selection (--only, --list), the device (--device cpu|cuda: every timed run waits for
// the GPU) and peak memory (process RSS and the CPU allocator; on CUDA the caching allocator).
// Also the pieces every bench_cuda_* repeats: GPU timing, the no-GPU exit, the CPU check.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/storage.h"
#include "core/tensor.h"
#include "ops/random.h"

namespace lumen::bench {

// The device the workloads run on (--device; set by parse_options).
inline Device& run_device() {
    static Device device = Device::cpu();
    return device;
}

// Waits for the GPU when the workloads run on one: kernels are asynchronous, so a timed run
// starts after the work queued before it and ends when its own work has finished.
inline void sync_device() {
    if (run_device().is_cuda()) cuda_synchronize();
}

inline double seconds_of(const std::function<void()>& body) {
    sync_device();
    auto start = std::chrono::steady_clock::now();
    body();
    sync_device();
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
    std::vector<std::string> only;  // --only a,b: run only the workloads these name
    bool list = false;              // --list: print the workload names and exit
    Device device = Device::cpu();  // --device cpu|cuda|cuda:i
};

// Reads --threads N, --repeats R, --only name1,name2, --list and --device D; ignores anything
// else. Asking for CUDA where there is none ends the process with a message (exit status 1);
// --help / -h says where the options are described, and exits, instead of running everything.
inline Options parse_options(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        bool has_value = i + 1 < argc;
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::printf(
                "%s: common options --threads N, --repeats R, --only NAME,NAME, --list, "
                "--device cpu|cuda; the rest are in this program's source header "
                "(bench/) and docs/benchmarks.md\n",
                argv[0]);
            std::exit(0);
        }
        if (std::strcmp(argv[i], "--list") == 0) options.list = true;
        if (!has_value) continue;
        if (std::strcmp(argv[i], "--threads") == 0) options.threads = std::atoi(argv[i + 1]);
        if (std::strcmp(argv[i], "--repeats") == 0)
            options.repeats = std::max(1, std::atoi(argv[i + 1]));
        if (std::strcmp(argv[i], "--device") == 0) {
            options.device = Device::parse(argv[i + 1]);
            if (options.device.is_cuda() && options.device.index >= cuda_device_count()) {
                std::fprintf(stderr, "%s: --device %s, but %s\n", argv[0], argv[i + 1],
                             cuda_built() ? "no such CUDA device is visible"
                                          : "lumen was built without CUDA (LUMEN_CUDA=OFF)");
                std::exit(1);
            }
            run_device() = options.device;
        }
        if (std::strcmp(argv[i], "--only") != 0) continue;
        std::string names = argv[i + 1];
        for (size_t start = 0; start < names.size();) {
            size_t comma = std::min(names.find(',', start), names.size());
            options.only.push_back(names.substr(start, comma - start));
            start = comma + 1;
        }
    }
    return options;
}

// Whether --only selects the workload `name`: every workload without --only; with it, those
// named or whose name continues with "_" ("--only sgemm" runs sgemm_256 ... sgemm_2048).
inline bool selected(const Options& options, const std::string& name) {
    if (options.only.empty()) return true;
    for (const std::string& o : options.only)
        if (name == o || name.rfind(o + "_", 0) == 0) return true;
    return false;
}

// ---- the timing policy shared with bench/torch_util.py (both sides must agree) ----

// One untimed run (two more when it took under 0.1 s), then `repeats` timed runs, fewer for a
// slow workload (3 above 1 s, 1 above 4 s) so that the default run keeps its time budget.
// Returns the median (the upper middle for an even count, as torch_util.py).
inline double timed_median(const std::function<void()>& body, double first_seconds, int repeats) {
    if (first_seconds < 0.1) {
        body();
        body();
    }
    if (first_seconds > 4)
        repeats = 1;
    else if (first_seconds > 1)
        repeats = std::min(repeats, 3);
    std::vector<double> times;
    for (int i = 0; i < repeats; ++i) times.push_back(seconds_of(body));
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// ---- peak memory ----

// A field of /proc/self/status in MiB ("VmRSS": resident now, "VmHWM": the peak); 0 off Linux.
inline double proc_status_mb(const std::string& field) {
    std::ifstream status("/proc/self/status");
    std::string key;
    double kib = 0;
    while (status >> key) {
        if (key == field + ":") {
            status >> kib;
            return kib / 1024;
        }
        std::getline(status, key);
    }
    return 0;
}

// Sets the process's peak RSS to the current RSS (Linux >= 4.0: "5" to /proc/self/clear_refs).
inline void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// The first run of a workload in a fresh process: its time, the growth of the process's peak
// RSS over the RSS before it (the same measure as torch_util.first_run), and the CPU
// allocator's peak of live tensor bytes over those allocated before it. On CUDA both figures
// are the caching allocator's peak of live bytes over those before (the measure of PyTorch's
// max_memory_allocated), as host RSS says nothing about the GPU.
struct FirstRun {
    double seconds, rss_mb, allocator_mb;
};

inline FirstRun first_run(const std::function<void()>& body) {
    if (run_device().is_cuda()) {
        const int index = run_device().index;
        sync_device();
        cuda::reset_peak_memory_stats(index);
        size_t before = cuda::memory_stats(index).allocated;
        double seconds = seconds_of(body);
        double peak = double(cuda::memory_stats(index).peak_allocated - before) / (1 << 20);
        return {seconds, peak, peak};
    }
    reset_peak_rss();
    double rss_before = proc_status_mb("VmRSS");
    cpu_reset_peak_memory_stats();
    size_t allocated_before = cpu_memory_stats().allocated;
    double seconds = seconds_of(body);
    double allocator = double(cpu_memory_stats().peak_allocated - allocated_before) / (1 << 20);
    return {seconds, proc_status_mb("VmHWM") - rss_before, allocator};
}

// The memory entry of a workload: "<name>_mem", RSS growth (CUDA: allocator peak) as the
// value, the allocator's peak beside it.
inline void report_memory(const std::string& name, const FirstRun& first) {
    std::printf(
        "{\"name\": \"%s_mem\", \"unit\": \"MB peak\", \"value\": %.1f, \"ms\": 0, "
        "\"allocator_mb\": %.1f}\n",
        name.c_str(), first.rss_mb, first.allocator_mb);
    std::fflush(stdout);
}

// A workload not run, with the reason (e.g. "would need >= 26 GB").
inline void report_skip(const std::string& name, const char* unit, const std::string& why) {
    std::printf(
        "{\"name\": \"%s\", \"unit\": \"%s\", \"value\": null, \"ms\": null, "
        "\"skipped\": \"%s\"}\n",
        name.c_str(), unit, why.c_str());
    std::fflush(stdout);
}

// The memory budget of one workload in GB (BENCH_MEMORY_LIMIT_GB, default 8): a workload whose
// estimated need is larger is skipped on both sides instead of running out of memory.
inline double memory_limit_gb() {
    const char* value = std::getenv("BENCH_MEMORY_LIMIT_GB");
    return value ? std::atof(value) : 8.0;
}

// One workload of a one-workload-per-process suite: "<name>" (ms) and "<name>_mem". Skipped on
// both entries, with the reason, when its estimated need `need_gb` (of `maps`, e.g. "3 N x N
// maps per head") exceeds memory_limit_gb(), or when the device runs out of memory (the CUDA
// allocator throws, naming the request) while `setup` builds it or its step runs; otherwise the
// step that `setup` returns is timed, its first run giving the memory figures. Other errors
// propagate. torch_util.measure_workload does the same for PyTorch.
inline void measure_workload(const std::string& name, double need_gb, const char* maps,
                             const std::function<std::function<void()>()>& setup, int repeats) {
    auto skip = [&](const std::string& why) {
        report_skip(name, "ms", why);
        report_skip(name + "_mem", "MB peak", why);
    };
    if (need_gb > memory_limit_gb()) {
        char why[96];
        std::snprintf(why, sizeof why, "would need >= %.0f GB (%s)", need_gb, maps);
        return skip(why);
    }
    try {
        std::function<void()> step = setup();
        FirstRun first = first_run(step);
        double s = timed_median(step, first.seconds, repeats);
        report(name, "ms", s * 1e3, s);
        report_memory(name, first);
    } catch (const Error& error) {
        std::string what = error.what();
        if (what.find("out of memory") == std::string::npos) throw;
        skip("ran out of memory");
        std::fprintf(stderr, "%s: %s\n", name.c_str(), what.c_str());
    }
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
