// Internal: the kernels of interpolate (nearest, nearest-exact and the separable linear modes,
// 1-D to 3-D alike: lower ranks have leading spatial dims of size 1), on the CPU
// (ops/cpu/interpolate.cpp) and on CUDA (ops/cuda/interpolate.cu) with the same signatures.
#pragma once

#include <cstdint>

#include "core/cuda_guard.h"
#include "core/strided.h"

namespace lumen {

enum class InterpolateMode { nearest, nearest_exact, linear };

// `planes` independent (D, H, W) volumes, stored contiguously one after the other.
// scale_factor[d] is the user's scale factor for dim d, or 0 when the output size was given
// (or recompute_scale_factor asked for it to be dropped): PyTorch then maps through
// 1 / scale_factor instead of in / out. align_corners applies to the linear mode only.
struct InterpolateGeometry {
    int64_t planes = 1;
    int64_t in[3] = {1, 1, 1};
    int64_t out[3] = {1, 1, 1};
    double scale_factor[3] = {0, 0, 0};
    bool align_corners = false;
    InterpolateMode mode = InterpolateMode::nearest;
};

namespace cpu {

// y (planes, outD, outH, outW) from x (planes, D, H, W), both contiguous float32/float64,
// with PyTorch's source-index formulas (UpSample.h, UpSampleKernel.cpp): nearest picks
// min(floor(o * scale), in - 1), nearest-exact min(floor((o + 0.5) * scale), in - 1), the
// scale in the tensor's dtype and the position rounded to float; linear blends the two neighbours
// of the source position o * (in - 1) / (out - 1) (align_corners) or max((o + 0.5) * scale - 0.5,
// 0), per dim.
void interpolate_forward(const StridedView& x, const StridedView& y,
                         const InterpolateGeometry& geometry);
// grad_x = 0, then every grad_out element is added to the inputs it was made from, with the
// same weights (a weighted scatter-add).
void interpolate_backward(const StridedView& grad_out, const StridedView& grad_x,
                          const InterpolateGeometry& geometry);

}  // namespace cpu

// The same kernels on the tensors' CUDA device (ops/cuda/interpolate.cu), float32 and float64,
// with the CPU's index and weight formulas evaluated in the same precision and rounding (no
// fused multiply-adds), so indices match exactly and values to the last bit in the usual
// case. Backward gathers (one thread per input element, in the CPU's order): no atomics.
namespace cuda {
LUMEN_CUDA_API void interpolate_forward(const StridedView& x, const StridedView& y,
                                        const InterpolateGeometry& geometry);
LUMEN_CUDA_API void interpolate_backward(const StridedView& grad_out, const StridedView& grad_x,
                                         const InterpolateGeometry& geometry);
}  // namespace cuda

}  // namespace lumen
