// parallel_for over an index range with a grain size: ranges smaller than the grain stay on
// the calling thread, so small tensors pay no OpenMP start-up. Chunks are contiguous and
// their boundaries depend only on the thread count, never on timing.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace lumen {

// Elementwise kernels split work in chunks of at least this many elements.
constexpr int64_t kGrainSize = 32768;

int get_num_threads();
void set_num_threads(int threads);  // <= 0 restores the default (all cores)

// Calls body(begin, end) on disjoint sub-ranges covering [begin, end). body must not throw.
template <typename Body>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const Body& body) {
    int64_t n = end - begin;
    if (n <= 0) return;
#ifdef _OPENMP
    int64_t max_chunks = (n + std::max<int64_t>(grain, 1) - 1) / std::max<int64_t>(grain, 1);
    int threads = int(std::min<int64_t>(get_num_threads(), max_chunks));
    if (threads > 1 && !omp_in_parallel()) {
#pragma omp parallel num_threads(threads)
        {
            int64_t id = omp_get_thread_num(), count = omp_get_num_threads();
            int64_t chunk = (n + count - 1) / count;
            int64_t lo = begin + id * chunk, hi = std::min(end, lo + chunk);
            if (lo < hi) body(lo, hi);
        }
        return;
    }
#endif
    body(begin, end);
}

// The lowest index any thread reported (-1 when none): parallel kernels note bad elements
// (an out-of-range class, a probability outside [0, 1]) without throwing inside OpenMP, and
// the op then reports the first one, the same one whatever the thread count.
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
