// Internal: the pooling window arithmetic shared by the CPU kernels (ops/cpu/pool.cpp, which
// tabulate the windows once per dim) and the CUDA kernels (ops/cuda/pool.cu, which compute
// them per output): PyTorch's max, average and adaptive windows and the average divisor.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/strided.h"
#include "ops/pool_kernels.h"

namespace lumen {

enum class PoolWindowKind { max, avg, adaptive };

// The inputs begin, begin + step, ... (< end) along one dim; `padded` is the window size
// counting padded positions (the count_include_pad divisor).
struct PoolWindow {
    int64_t begin = 0, end = 0, step = 1, padded = 0;
};

// The window of output o along spatial dim `dim`:
// max: dilated taps from o * stride - padding, (kernel - 1) * dilation + 1 long, clipped to
//   the input; the first visited one is the first tap >= 0.
// avg: [o * stride - padding, + kernel) clipped to the padded input gives the
//   count_include_pad size, then clipped to the input gives the visited range.
// adaptive: [floor(o * in / out), ceil((o + 1) * in / out)); the cells cover the input and
//   overlap by at most one element when in is not a multiple of out.
LUMEN_HOST_DEVICE inline PoolWindow pool_window(PoolWindowKind kind, const PoolGeometry& g, int dim,
                                                int64_t o) {
    PoolWindow w;
    if (kind == PoolWindowKind::adaptive) {
        int64_t in = g.in[dim], out = g.out[dim];
        w.begin = o * in / out;
        w.end = ((o + 1) * in + out - 1) / out;
        w.padded = w.end - w.begin;
    } else if (kind == PoolWindowKind::max) {
        w.step = g.dilation[dim];
        w.begin = o * g.stride[dim] - g.padding[dim];
        w.end = std::min(w.begin + (g.kernel[dim] - 1) * w.step + 1, g.in[dim]);
        if (w.begin < 0) w.begin += (-w.begin + w.step - 1) / w.step * w.step;
    } else {
        int64_t start = o * g.stride[dim] - g.padding[dim];
        int64_t end = std::min(start + g.kernel[dim], g.in[dim] + g.padding[dim]);
        w.padded = end - start;
        w.begin = std::max<int64_t>(start, 0);
        w.end = std::min(end, g.in[dim]);
    }
    return w;
}

// The average pool divisor of the window (wd, wh, ww): divisor_override when it is not 0, else
// the window size counted with padding (count_include_pad) or without.
LUMEN_HOST_DEVICE inline int64_t pool_divisor(const PoolWindow& wd, const PoolWindow& wh,
                                              const PoolWindow& ww, bool count_include_pad,
                                              int64_t divisor_override) {
    if (divisor_override != 0) return divisor_override;
    if (count_include_pad) return wd.padded * wh.padded * ww.padded;
    return (wd.end - wd.begin) * (wh.end - wh.begin) * (ww.end - ww.begin);
}

// The max over the window (wd, wh, ww) of one input plane and its flat position in the plane.
// The first maximum wins; a NaN replaces any maximum (PyTorch's `val > max || isnan(val)`); an
// empty window gives -inf and the position of its first tap. Branch-free: maxima are random.
template <typename T>
struct PoolMax {
    T value;
    int64_t index;
};

template <typename T>
LUMEN_HOST_DEVICE inline PoolMax<T> pool_window_max(const T* plane, const PoolGeometry& g,
                                                    const PoolWindow& wd, const PoolWindow& wh,
                                                    const PoolWindow& ww) {
    const int64_t height = g.in[1], width = g.in[2];
    T best = -std::numeric_limits<T>::infinity();
    int64_t best_index = (wd.begin * height + wh.begin) * width + ww.begin;
    for (int64_t d = wd.begin; d < wd.end; d += wd.step) {
        for (int64_t h = wh.begin; h < wh.end; h += wh.step) {
            int64_t row = (d * height + h) * width;
            for (int64_t w = ww.begin; w < ww.end; w += ww.step) {
                T v = plane[row + w];
                bool take = (v > best) | (v != v);
                best = take ? v : best;
                best_index = take ? row + w : best_index;
            }
        }
    }
    return {best, best_index};
}

// The average pool of the window (wd, wh, ww) of one input plane: the sum in (d, h, w) order
// over pool_divisor. An empty window (only possible in ceil mode) gives 0, as in PyTorch.
template <typename T>
LUMEN_HOST_DEVICE inline T pool_window_average(const T* plane, const PoolGeometry& g,
                                               const PoolWindow& wd, const PoolWindow& wh,
                                               const PoolWindow& ww, bool count_include_pad,
                                               int64_t divisor_override) {
    if (wd.begin >= wd.end || wh.begin >= wh.end || ww.begin >= ww.end) return T(0);
    const int64_t height = g.in[1], width = g.in[2];
    T total = T(0);
    for (int64_t d = wd.begin; d < wd.end; ++d) {
        for (int64_t h = wh.begin; h < wh.end; ++h) {
            const T* row = plane + (d * height + h) * width;
            for (int64_t w = ww.begin; w < ww.end; ++w) total += row[w];
        }
    }
    return total / T(pool_divisor(wd, wh, ww, count_include_pad, divisor_override));
}

// Elements in one (D, H, W) plane of the input and of the output.
LUMEN_HOST_DEVICE inline int64_t pool_in_plane(const PoolGeometry& g) {
    return g.in[0] * g.in[1] * g.in[2];
}
LUMEN_HOST_DEVICE inline int64_t pool_out_plane(const PoolGeometry& g) {
    return g.out[0] * g.out[1] * g.out[2];
}

}  // namespace lumen
