// Internal: PyTorch's interpolate source-index formulas (UpSample.h), shared by the CPU
// kernels (ops/cpu/interpolate.cpp, which tabulate them per dim) and the CUDA kernels
// (ops/cuda/interpolate.cu, which evaluate them per output), so that both backends read the
// very same inputs. T is the tensor's dtype: PyTorch computes the scales and positions in it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/strided.h"

namespace lumen {

// area_pixel_compute_scale: input positions per output position along one dim. scale_factor
// is the user's factor or 0 (then in / out); align_corners (linear modes only) maps the corner
// pixels onto each other.
template <typename T>
LUMEN_HOST_DEVICE inline T interpolate_scale(int64_t in, int64_t out, double scale_factor,
                                             bool align_corners) {
    if (align_corners) return out > 1 ? T(in - 1) / T(out - 1) : T(0);
    return scale_factor > 0 ? T(1.0 / scale_factor) : T(in) / T(out);
}

// PyTorch's NCHW nearest kernels (HelperInterpNearest[Exact]): nearest min(floor(o * scale),
// in - 1), nearest-exact min(floor((o + 0.5) * scale), in - 1), the position rounded to float
// before the floor (neither expression can fuse into an fma). Checked against PyTorch 1.13 for
// sizes 1-40 -> 1-50 and several scale factors, float32 and float64. (PyTorch's channels-last
// kernel, which it also picks for C == 1, keeps the scale in float, so float64 inputs with
// C == 1 can differ there in rare rounding cases.)
template <typename T>
LUMEN_HOST_DEVICE inline int64_t nearest_source_index(T scale, int64_t o, int64_t in, bool exact) {
    float source = exact ? float((double(o) + 0.5) * double(scale)) : float(T(scale * T(o)));
    return std::min(int64_t(std::floor(source)), in - 1);
}

// Output o of a linear dim reads inputs i0, i1 with weights l0, l1.
template <typename T>
struct LinearTap {
    int64_t i0, i1;
    T l0, l1;
};

// compute_source_index_and_lambda for a dim that resamples (in != out). Half-pixel centres:
// (o + 0.5) is a double in PyTorch, the result is rounded to T; negative positions clamp to 0
// (both taps are then input 0 anyway). The fused multiply-add is what GCC emits for
// `scale * (o + 0.5) - 0.5` on FMA machines; written out, the index does not depend on the
// build flags or the device.
template <typename T>
LUMEN_HOST_DEVICE inline LinearTap<T> linear_source(T scale, int64_t o, int64_t in,
                                                    bool align_corners) {
    T source = align_corners ? T(scale * T(o)) : T(std::fma(double(scale), double(o) + 0.5, -0.5));
    if (!align_corners && source < T(0)) source = T(0);
    int64_t i0 = std::min(int64_t(source), in - 1);
    T l1 = std::clamp(source - T(i0), T(0), T(1));
    return {i0, i0 + (i0 < in - 1 ? 1 : 0), T(1) - l1, l1};
}

}  // namespace lumen
