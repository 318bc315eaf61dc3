// parallel_for over an index range with a grain size, on lumen's own thread pool
// (core/parallel.cpp). Ranges smaller than the grain stay on the calling thread, so small
// tensors pay no start-up. Chunks are contiguous and their boundaries depend only on the thread
// count, never on timing or on which thread runs them, so results are the same run to run.
//
// The pool's idle threads sleep (after a spin of a few microseconds), so a program that embeds
// lumen keeps its cores for its own threads (a data loader, a UI) without any setting.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace lumen {

// Elementwise kernels split work in chunks of at least this many elements.
constexpr int64_t kGrainSize = 32768;

// The threads parallel_for uses: set_num_threads, else OMP_NUM_THREADS or LUMEN_NUM_THREADS
// when set, else the CPUs this process may run on.
int get_num_threads();
void set_num_threads(int threads);  // <= 0 restores the default

namespace detail {
// Runs task(context, i) for every i in [0, count), on the pool and the calling thread, and
// returns when all are done. When this thread is already inside a parallel region, or another
// thread holds the pool, it runs them one after the other here instead. The first exception a
// task throws is rethrown here once all tasks have finished.
void run_tasks(int count, void (*task)(void* context, int i), void* context);
}  // namespace detail

// Calls body(begin, end) on disjoint sub-ranges covering [begin, end).
template <typename Body>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const Body& body) {
    int64_t n = end - begin;
    if (n <= 0) return;
    int64_t max_chunks = (n + std::max<int64_t>(grain, 1) - 1) / std::max<int64_t>(grain, 1);
    int chunks = int(std::min<int64_t>(get_num_threads(), max_chunks));
    if (chunks <= 1) {
        body(begin, end);
        return;
    }
    struct Range {
        const Body& body;
        int64_t begin, end, chunk;
    } range{body, begin, end, (n + chunks - 1) / chunks};
    detail::run_tasks(
        chunks,
        [](void* context, int i) {
            const Range& r = *static_cast<const Range*>(context);
            int64_t lo = r.begin + i * r.chunk, hi = std::min(r.end, lo + r.chunk);
            if (lo < hi) r.body(lo, hi);
        },
        &range);
}

// The lowest index any thread reported (-1 when none): parallel kernels note bad elements
// (an out-of-range class, a probability outside [0, 1]) without throwing inside a parallel
// region, and the op then reports the first one, the same one whatever the thread count.
struct FirstInvalid {
    std::atomic<int64_t> index{-1};
    void note(int64_t i) {
        int64_t seen = index.load(std::memory_order_relaxed);
        while ((seen < 0 || i < seen) &&
               !index.compare_exchange_weak(seen, i, std::memory_order_relaxed)) {
        }
    }
};

}  // namespace lumen
