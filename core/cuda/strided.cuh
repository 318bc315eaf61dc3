// Helpers for launching CUDA kernels over StridedViews (core/strided.h; kernels index them
// with strided_offset).
#pragma once

#include "core/strided.h"

namespace lumen::cuda {

// Whether `view` is laid out row-major without gaps (offset == linear index).
inline bool is_dense(const StridedView& view) {
    int64_t expected = 1;
    for (int d = view.ndim - 1; d >= 0; --d) {
        if (view.shape[d] != 1 && view.strides[d] != expected) return false;
        expected *= view.shape[d];
    }
    return true;
}

// A grid for a grid-stride loop over `count` elements with 256 threads per block.
inline unsigned grid_for(int64_t count) {
    int64_t blocks = (count + 255) / 256;
    return unsigned(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

}  // namespace lumen::cuda
