// Timing and reporting shared by the bench_* executables: every figure is the median of
// several timed repeats after untimed warm-ups, printed as one JSON object per line in the
// format bench/run.sh pairs with the PyTorch scripts (bench/torch_util.py prints the same).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

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

}  // namespace lumen::bench
