// The thread pool behind parallel_for (core/parallel.cpp): every index covered exactly once,
// chunk boundaries fixed by the thread count, nested and concurrent callers, exceptions, and
// idle threads that sleep instead of spinning.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "core/parallel.h"

using namespace lumen;

namespace {

// Restores the thread count a test changed.
struct ThreadCount {
    explicit ThreadCount(int threads) { set_num_threads(threads); }
    ~ThreadCount() { set_num_threads(0); }
};

// The [begin, end) ranges parallel_for handed to its body, sorted.
std::set<std::pair<int64_t, int64_t>> ranges_of(int64_t begin, int64_t end, int64_t grain) {
    std::mutex mutex;
    std::set<std::pair<int64_t, int64_t>> ranges;
    parallel_for(begin, end, grain, [&](int64_t lo, int64_t hi) {
        std::lock_guard<std::mutex> lock(mutex);
        ranges.insert({lo, hi});
    });
    return ranges;
}

double cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           1e-6 * double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

}  // namespace

TEST_CASE("parallel_for covers every index once, in chunks fixed by the thread count", "[parallel]") {
    ThreadCount threads(4);
    std::vector<std::atomic<int>> hits(1000);
    parallel_for(0, 1000, 10, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) hits[size_t(i)].fetch_add(1);
    });
    for (auto& hit : hits) REQUIRE(hit.load() == 1);

    // 4 threads: chunks of ceil(1000 / 4) = 250 from the start of the range.
    auto expected = std::set<std::pair<int64_t, int64_t>>{{5, 255}, {255, 505}, {505, 755}, {755, 1005}};
    for (int run = 0; run < 20; ++run) REQUIRE(ranges_of(5, 1005, 10) == expected);
    // Fewer grains than threads: one chunk per grain; below one grain: the caller alone.
    REQUIRE(ranges_of(0, 30, 10) == std::set<std::pair<int64_t, int64_t>>{{0, 10}, {10, 20}, {20, 30}});
    REQUIRE(ranges_of(0, 7, 10) == std::set<std::pair<int64_t, int64_t>>{{0, 7}});
    REQUIRE(ranges_of(3, 3, 1).empty());
}

TEST_CASE("parallel_for called inside a task or from several threads at once", "[parallel]") {
    ThreadCount threads(4);
    std::atomic<int64_t> total{0};
    parallel_for(0, 8, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
            parallel_for(0, 100, 1, [&](int64_t a, int64_t b) { total.fetch_add(b - a); });
        }
    });
    REQUIRE(total.load() == 800);

    // Callers that find the pool busy run their chunks themselves: same sums, no deadlock.
    std::vector<int64_t> sums(6, 0);
    std::vector<std::thread> callers;
    for (size_t t = 0; t < sums.size(); ++t) {
        callers.emplace_back([&sums, t] {
            for (int round = 0; round < 200; ++round) {
                std::atomic<int64_t> sum{0};
                parallel_for(0, 10000, 100, [&](int64_t lo, int64_t hi) {
                    int64_t s = 0;
                    for (int64_t i = lo; i < hi; ++i) s += i;
                    sum.fetch_add(s);
                });
                sums[t] += sum.load();
            }
        });
    }
    for (auto& caller : callers) caller.join();
    for (int64_t sum : sums) REQUIRE(sum == 200 * (int64_t(9999) * 10000 / 2));
}

TEST_CASE("an exception thrown in a parallel_for task reaches the caller", "[parallel]") {
    ThreadCount threads(4);
    std::atomic<int> ran{0};
    REQUIRE_THROWS_WITH(parallel_for(0, 400, 1,
                                     [&](int64_t lo, int64_t) {
                                         ran.fetch_add(1);
                                         if (lo >= 200) throw std::runtime_error("bad chunk");
                                     }),
                        "bad chunk");
    REQUIRE(ran.load() == 4);  // the other chunks still ran; the pool is usable afterwards
    std::atomic<int64_t> count{0};
    parallel_for(0, 400, 1, [&](int64_t lo, int64_t hi) { count.fetch_add(hi - lo); });
    REQUIRE(count.load() == 400);
}

TEST_CASE("idle pool threads sleep instead of spinning", "[parallel]") {
    ThreadCount threads(4);
    std::atomic<int64_t> sink{0};
    parallel_for(0, 4, 1, [&](int64_t lo, int64_t) { sink.fetch_add(lo); });  // start the pool
    // Between jobs the workers spin for microseconds, then sleep: 300 ms of the caller
    // sleeping must cost the process next to no CPU time (3 spinning threads would use ~0.9 s).
    double before = cpu_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    double used = cpu_seconds() - before;
    INFO("CPU seconds used while idle: " << used);
    REQUIRE(used < 0.05);
}

TEST_CASE("a forked child runs parallel_for without its parent's threads", "[parallel]") {
    ThreadCount threads(4);
    std::atomic<int64_t> count{0};
    parallel_for(0, 4, 1, [&](int64_t lo, int64_t hi) { count.fetch_add(hi - lo); });
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::atomic<int64_t> child{0};
        parallel_for(0, 1000, 1, [&](int64_t lo, int64_t hi) { child.fetch_add(hi - lo); });
        _exit(child.load() == 1000 ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
}
