// Template bodies for strided.h (the row walker shared by copy and the elementwise kernels).
#pragma once

#include "core/parallel.h"

namespace lumen {

template <int Count, typename Row>
void for_each_row(const StridedView (&views)[Count], const Row& row) {
    const StridedView& first = views[0];
    int ndim = first.ndim;
    int64_t inner = ndim ? first.shape[ndim - 1] : 1;
    int64_t total = first.numel();
    if (total == 0) return;
    int64_t rows = total / inner;
    int64_t inner_strides[Count];
    for (int v = 0; v < Count; ++v) inner_strides[v] = ndim ? views[v].strides[ndim - 1] : 0;
    int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(inner, 1));
    parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
        // Odometer over the outer dims: decompose the first row once, then step.
        int64_t index[kMaxDims] = {};
        int64_t offsets[Count] = {};
        int64_t rest = lo;
        for (int d = ndim - 2; d >= 0; --d) {
            index[d] = rest % first.shape[d];
            rest /= first.shape[d];
            for (int v = 0; v < Count; ++v) offsets[v] += index[d] * views[v].strides[d];
        }
        for (int64_t r = lo; r < hi; ++r) {
            row(offsets, inner, inner_strides);
            for (int d = ndim - 2; d >= 0; --d) {
                for (int v = 0; v < Count; ++v) offsets[v] += views[v].strides[d];
                if (++index[d] < first.shape[d]) break;
                for (int v = 0; v < Count; ++v) offsets[v] -= index[d] * views[v].strides[d];
                index[d] = 0;
            }
        }
    });
}

}  // namespace lumen
