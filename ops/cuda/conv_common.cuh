// Helpers shared by the CUDA convolution kernels (ops/cuda/conv.cu and
// ops/cuda/conv_depthwise.cu): spatial positions in the 3-D view of a ConvShape, and the output
// position a kernel tap reads a given input position from (the gather form of the adjoint, which
// needs no atomics).
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

}  // namespace lumen::cuda
