// CPU softmax / log_softmax, forward and backward, over contiguous (outer, length, inner).
// inner == 1 (the last dim): each row is done in three passes (max; exp and sum; scale) that
// hit L1 after the first. inner > 1: blocks of adjacent columns are gathered into a small
// contiguous scratch buffer (rows `inner` apart alias in the cache when inner is a power of
// two), the passes run there with the columns as the vectorized loop, and the result is
// scattered back once.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/reduce_kernels.h"
#include "ops/softmax_kernels.h"
#include "ops/softmax_math.h"

namespace lumen::cpu {

namespace {

constexpr int64_t kScratchBytes = 256 * 1024;  // a block's gathered rows, to stay in L2

using Layout = DimBlocks;  // (outer, length, inner) around the softmax dim

// ---- rows (inner == 1) ----

// e^v for v <= 0 in plain float arithmetic, so that the loops around it vectorize.
struct CpuMath {
    template <typename T>
    static T exp_nonpositive(T v) {
        return vec::exp_nonpositive(v);
    }
};

// The max is subtracted so that exp never overflows (a row holding +inf or only -inf gives
// NaN, as in PyTorch).
template <typename T>
void forward_row(const T* x, T* y, int64_t n, bool log) {
    T max = vec::extremum<true>(x, n);
    if (log) {
        T total =
            T(vec::lane_sum<T>(n, [&](int64_t i) { return vec::exp_nonpositive(T(x[i] - max)); }));
        T log_total = softmax_math::row_factor(total, true);
        for (int64_t i = 0; i < n; ++i) y[i] = softmax_math::output(x[i], max, log_total, true);
        return;
    }
    T total = T(vec::lane_sum<T>(n, [&](int64_t i) {
        T e = vec::exp_nonpositive(T(x[i] - max));
        y[i] = e;
        return e;
    }));
    T scale = softmax_math::row_factor(total, false);
    for (int64_t i = 0; i < n; ++i) y[i] = softmax_math::output(y[i], max, scale, false);
}

template <typename T>
void backward_row(const T* y, const T* g, T* dx, int64_t n, bool log) {
    if (log) {
        T total = T(vec::lane_sum<T>(n, [&](int64_t i) { return g[i]; }));
        for (int64_t i = 0; i < n; ++i)
            dx[i] = softmax_math::grad<CpuMath>(y[i], g[i], total, true);
        return;
    }
    T dot = T(vec::lane_sum<T>(n, [&](int64_t i) { return g[i] * y[i]; }));
    for (int64_t i = 0; i < n; ++i) dx[i] = softmax_math::grad<CpuMath>(y[i], g[i], dot, false);
}

// ---- column blocks (inner > 1) ----
// A block is kWidth adjacent columns of one outer index: x, y, g, dx point at its first
// element and its rows are `stride` apart. kWidth is a compile-time constant so that the
// per-column max and sum stay in registers.

template <typename T, int kWidth, bool kLog>
void forward_block(const T* x, T* y, int64_t length, int64_t stride, T* scratch) {
    T max[kWidth], total[kWidth];
    for (int w = 0; w < kWidth; ++w) {
        max[w] = x[w];
        total[w] = 0;
    }
    for (int64_t l = 0; l < length; ++l) {
        const T* row = x + l * stride;
        T* copy = scratch + l * kWidth;
        for (int w = 0; w < kWidth; ++w) {
            T v = row[w];
            copy[w] = v;
            max[w] = ((v > max[w]) | (v != v)) ? v : max[w];  // NaN propagates
        }
    }
    for (int64_t l = 0; l < length; ++l) {
        T* copy = scratch + l * kWidth;
        for (int w = 0; w < kWidth; ++w) {
            T e = vec::exp_nonpositive(T(copy[w] - max[w]));
            if constexpr (!kLog) copy[w] = e;
            total[w] += e;
        }
    }
    for (int w = 0; w < kWidth; ++w) total[w] = softmax_math::row_factor(total[w], kLog);
    for (int64_t l = 0; l < length; ++l) {
        const T* copy = scratch + l * kWidth;
        T* row = y + l * stride;
        for (int w = 0; w < kWidth; ++w)
            row[w] = softmax_math::output(copy[w], max[w], total[w], kLog);
    }
}

// scratch holds y's block then g's block.
template <typename T, int kWidth, bool kLog>
void backward_block(const T* y, const T* g, T* dx, int64_t length, int64_t stride, T* scratch) {
    T* y_copy = scratch;
    T* g_copy = scratch + length * kWidth;
    T total[kWidth] = {};
    for (int64_t l = 0; l < length; ++l) {
        for (int w = 0; w < kWidth; ++w) {
            T yv = y[l * stride + w], gv = g[l * stride + w];
            y_copy[l * kWidth + w] = yv;
            g_copy[l * kWidth + w] = gv;
            total[w] += softmax_math::backward_term(yv, gv, kLog);
        }
    }
    for (int64_t l = 0; l < length; ++l) {
        const T* yr = y_copy + l * kWidth;
        const T* gr = g_copy + l * kWidth;
        T* row = dx + l * stride;
        for (int w = 0; w < kWidth; ++w)
            row[w] = softmax_math::grad<CpuMath>(yr[w], gr[w], total[w], kLog);
    }
}

// Calls block.template operator()<kWidth>(offset, scratch) for the column blocks covering
// every outer index, in parallel: blocks of kWide columns (128 bytes of each row) while the
// gathered rows fit in kScratchBytes, then kNarrow (32 bytes), then single columns. `arrays`
// is how many length x kWidth arrays the block keeps in scratch.
template <typename T, typename Block>
void for_each_block(const Layout& layout, int64_t arrays, const Block& block) {
    constexpr int kWide = 128 / sizeof(T), kNarrow = 32 / sizeof(T);
    int64_t bytes_per_column = arrays * layout.length * int64_t(sizeof(T));
    bool wide = bytes_per_column * kWide <= kScratchBytes;
    bool narrow = bytes_per_column * kNarrow <= kScratchBytes;
    int64_t wide_blocks = wide ? layout.inner / kWide : 0;
    int64_t rest = layout.inner - wide_blocks * kWide;
    int64_t narrow_blocks = narrow ? rest / kNarrow : 0;
    int64_t singles = rest - narrow_blocks * kNarrow;
    int64_t blocks = wide_blocks + narrow_blocks + singles;
    int64_t widest = wide ? kWide : (narrow ? kNarrow : 1);
    int64_t grain = std::max<int64_t>(1, kGrainSize / (layout.length * widest));
    parallel_for(0, layout.outer * blocks, grain, [&](int64_t lo, int64_t hi) {
        std::vector<T> scratch(static_cast<size_t>(arrays * layout.length * widest));
        for (int64_t task = lo; task < hi; ++task) {
            int64_t b = task % blocks, offset = task / blocks * layout.length * layout.inner;
            if (b < wide_blocks) {
                block.template operator()<kWide>(offset + b * kWide, scratch.data());
            } else if (b < wide_blocks + narrow_blocks) {
                offset += wide_blocks * kWide + (b - wide_blocks) * kNarrow;
                block.template operator()<kNarrow>(offset, scratch.data());
            } else {
                offset += wide_blocks * kWide + narrow_blocks * kNarrow +
                          (b - wide_blocks - narrow_blocks);
                block.template operator()<1>(offset, scratch.data());
            }
        }
    });
}

template <typename T, bool kLog>
void forward_typed(const Layout& layout, const T* x, T* y) {
    int64_t n = layout.length;
    if (layout.inner == 1) {
        parallel_for(0, layout.outer, std::max<int64_t>(1, kGrainSize / n),
                     [&](int64_t lo, int64_t hi) {
                         for (int64_t r = lo; r < hi; ++r)
                             forward_row(x + r * n, y + r * n, n, kLog);
                     });
        return;
    }
    for_each_block<T>(layout, 1, [&]<int kWidth>(int64_t offset, T* scratch) {
        forward_block<T, kWidth, kLog>(x + offset, y + offset, n, layout.inner, scratch);
    });
}

template <typename T, bool kLog>
void backward_typed(const Layout& layout, const T* y, const T* g, T* dx) {
    int64_t n = layout.length;
    if (layout.inner == 1) {
        parallel_for(0, layout.outer, std::max<int64_t>(1, kGrainSize / n),
                     [&](int64_t lo, int64_t hi) {
                         for (int64_t r = lo; r < hi; ++r)
                             backward_row(y + r * n, g + r * n, dx + r * n, n, kLog);
                     });
        return;
    }
    for_each_block<T>(layout, 2, [&]<int kWidth>(int64_t offset, T* scratch) {
        backward_block<T, kWidth, kLog>(y + offset, g + offset, dx + offset, n, layout.inner,
                                        scratch);
    });
}

}  // namespace

void softmax_forward(const StridedView& x, const StridedView& y, int dim, bool log) {
    Layout layout = dim_blocks(x, dim);
    if (layout.outer * layout.length * layout.inner == 0) return;
    dispatch_floating(x.dtype, log ? "log_softmax" : "softmax", [&]<typename T>() {
        if (log) {
            forward_typed<T, true>(layout, x.ptr<T>(), y.ptr<T>());
        } else {
            forward_typed<T, false>(layout, x.ptr<T>(), y.ptr<T>());
        }
    });
}

void softmax_backward(const StridedView& y, const StridedView& grad_out, const StridedView& grad_x,
                      int dim, bool log) {
    Layout layout = dim_blocks(y, dim);
    if (layout.outer * layout.length * layout.inner == 0) return;
    dispatch_floating(y.dtype, log ? "log_softmax" : "softmax", [&]<typename T>() {
        if (log) {
            backward_typed<T, true>(layout, y.ptr<T>(), grad_out.ptr<T>(), grad_x.ptr<T>());
        } else {
            backward_typed<T, false>(layout, y.ptr<T>(), grad_out.ptr<T>(), grad_x.ptr<T>());
        }
    });
}

}  // namespace lumen::cpu
