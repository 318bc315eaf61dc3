// Helpers shared by the CUDA convolution kernels (ops/cuda/conv.cu and
// ops/cuda/conv_depthwise.cu): spatial positions in the 3-D view of a ConvShape, and the output
// positions the kernel taps read a given input position for (the gather form of the adjoint,
// which needs no atomics).
#pragma once

#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/scratch.cuh"
#include "ops/conv_kernels.h"

namespace lumen::cuda {

// A position in a (D, H, W) grid.
struct Position {
    int64_t d, h, w;
};

__device__ __forceinline__ Position unravel3(int64_t linear, const int64_t (&size)[3]) {
    int64_t w = linear % size[2], rest = linear / size[2];
    return {rest / size[1], rest % size[1], w};
}

__device__ __forceinline__ int64_t volume(const int64_t (&size)[3]) {
    return size[0] * size[1] * size[2];
}

// The output index o along `dim` from which tap k reads input index i (o * stride - padding
// + k * dilation = i), or -1 when there is none.
__device__ __forceinline__ int64_t source_index(int64_t i, int64_t k, int dim, const ConvShape& s) {
    int64_t scaled = i + s.padding[dim] - k * s.dilation[dim];
    if (scaled < 0 || scaled % s.stride[dim] != 0) return -1;
    int64_t o = scaled / s.stride[dim];
    return o < s.output[dim] ? o : -1;
}

// Calls tap(k, o) for every kernel tap k (row-major over kernel[0..2]) that reads input
// position `in`, with o the output position (row-major over output[0..2]) it reads it for:
// the loops of every gathering adjoint (col2im, the depthwise grad_x).
template <typename Tap>
__device__ __forceinline__ void for_each_source(const Position& in, const ConvShape& s,
                                                const Tap& tap) {
    for (int64_t kd = 0; kd < s.kernel[0]; ++kd) {
        int64_t od = source_index(in.d, kd, 0, s);
        if (od < 0) continue;
        for (int64_t kh = 0; kh < s.kernel[1]; ++kh) {
            int64_t oh = source_index(in.h, kh, 1, s);
            if (oh < 0) continue;
            for (int64_t kw = 0; kw < s.kernel[2]; ++kw) {
                int64_t ow = source_index(in.w, kw, 2, s);
                if (ow < 0) continue;
                tap((kd * s.kernel[1] + kh) * s.kernel[2] + kw,
                    (od * s.output[1] + oh) * s.output[2] + ow);
            }
        }
    }
}

}  // namespace lumen::cuda
