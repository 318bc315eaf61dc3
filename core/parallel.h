// parallel_for over an index range with a grain size: ranges smaller than the grain stay on
// the calling thread, so small tensors pay no OpenMP start-up. Chunks are contiguous and
// their boundaries depend only on the thread count, never on timing.
#pragma once

#include <algorithm>
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

}  // namespace lumen
