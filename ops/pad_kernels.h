// Internal: the kernels of pad (constant, reflect, replicate, circular over any number of
// trailing dims), on the CPU (ops/cpu/pad.cpp) and on CUDA (ops/cuda/pad.cu) with the same
// signatures.
#pragma once

#include <cstdint>

#include "core/cuda_guard.h"
#include "core/shape.h"
#include "core/strided.h"

namespace lumen {

enum class PadMode { constant, reflect, replicate, circular };

// x viewed as (outer, in[0], ..., in[dims - 1]) and y as (outer, out[0], ..., out[dims - 1]),
// both contiguous. Along padded dim j, output o comes from input position o - before[j]
// (before may be negative: a crop), mapped into the input by the mode when it falls outside:
// constant -> `value`; reflect -> mirrored without repeating the edge (needs before, after <
// in); replicate -> the nearest edge; circular -> wrapped around (needs before, after <= in).
struct PadGeometry {
    int64_t outer = 1;
    int dims = 0;
    int64_t in[kMaxDims] = {};
    int64_t out[kMaxDims] = {};
    int64_t before[kMaxDims] = {};
    PadMode mode = PadMode::constant;
    double value = 0.0;
};

// The input index that output o copies along one dim (before, in: that dim's), or -1 for the
// constant. Used by both backends.
LUMEN_HOST_DEVICE inline int64_t pad_source_index(int64_t o, int64_t before, int64_t in,
                                                  PadMode mode) {
    int64_t p = o - before;
    if (p >= 0 && p < in) return p;
    switch (mode) {
        case PadMode::constant: return -1;
        case PadMode::reflect: return p < 0 ? -p : 2 * (in - 1) - p;
        case PadMode::replicate: return p < 0 ? 0 : in - 1;
        case PadMode::circular: return ((p % in) + in) % in;
    }
    return -1;
}

// The constant-mode backward as a forward pad: output o was input o - before, so input i is
// output i + before, and grad_x is grad_out padded by -before / -after with zeros.
inline PadGeometry constant_pad_inverse(const PadGeometry& geometry) {
    PadGeometry inverse = geometry;
    inverse.value = 0.0;
    for (int j = 0; j < geometry.dims; ++j) {
        inverse.in[j] = geometry.out[j];
        inverse.out[j] = geometry.in[j];
        inverse.before[j] = -geometry.before[j];
    }
    return inverse;
}

namespace cpu {

// y = pad(x), any numeric or bool dtype, y of x's dtype.
void pad_forward(const StridedView& x, const StridedView& y, const PadGeometry& geometry);
// grad_x (shape of x) = the sum of grad_out over the outputs each input was copied to
// (constant mode: a crop of grad_out, with zeros where x was cropped away); float32/float64.
void pad_backward(const StridedView& grad_out, const StridedView& grad_x,
                  const PadGeometry& geometry);

}  // namespace cpu

// The same kernels on the tensors' CUDA device (ops/cuda/pad.cu), for the same dtypes. The
// non-constant backward gathers (each input sums the outputs that copied it, in the CPU's
// order): no atomics, deterministic.
namespace cuda {
LUMEN_CUDA_API void pad_forward(const StridedView& x, const StridedView& y,
                                const PadGeometry& geometry);
LUMEN_CUDA_API void pad_backward(const StridedView& grad_out, const StridedView& grad_x,
                                 const PadGeometry& geometry);
}  // namespace cuda

}  // namespace lumen
