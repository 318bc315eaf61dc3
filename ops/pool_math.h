// Internal: the pooling window arithmetic shared by the CPU kernels (ops/cpu/pool.cpp, which
// tabulate the windows once per dim) and the CUDA kernels (ops/cuda/pool.cu, which compute
// them per output): PyTorch's max, average and adaptive windows and the average divisor.
#pragma once

#include <algorithm>
#include <cstdint>

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

// Elements in one (D, H, W) plane of the input and of the output.
LUMEN_HOST_DEVICE inline int64_t pool_in_plane(const PoolGeometry& g) {
    return g.in[0] * g.in[1] * g.in[2];
}
LUMEN_HOST_DEVICE inline int64_t pool_out_plane(const PoolGeometry& g) {
    return g.out[0] * g.out[1] * g.out[2];
}

}  // namespace lumen
