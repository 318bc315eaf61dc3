// Internal: the CPU and CUDA dropout kernels. The mask uses the element-to-block mapping of
// bernoulli (ops/random_kernels.h): for float32, element i is kept when the 24-bit uniform
// from word i % 4 of philox4x32(seed, offset + i / 4) is below 1 - p; for float64, the 53-bit
// uniform from words 2 (i % 2), 2 (i % 2) + 1 of block offset + i / 2. The CUDA kernels draw
// the same words and compare the same values, so CPU and CUDA masks are identical. Under a
// sample shard, local element i takes the uniform of global element shard.global(i)
// (core/sample_shard.h); the identity map is the plain mapping above.
#pragma once

#include <cstdint>

#include "core/cuda_guard.h"
#include "core/sample_shard.h"
#include "core/strided.h"

namespace lumen {

namespace cpu {

// words[4 j + w] = philox4x32(key, first + j).x[w] for j < blocks (AVX2 lanes where available):
// the words other kernels turn into the same masks (the fused attention, ops/cpu/attention.cpp).
void philox_words(uint64_t key, uint64_t first, int64_t blocks, uint32_t* words);

// x, out (same shape, x's float dtype) and mask (uint8) contiguous, numel a multiple of
// shard.per: mask[i] = keep_i, out[i] = x[i] * (keep_i ? scale : 0), keep_i from global element
// shard.global(i).
void dropout_forward(uint64_t seed, uint64_t offset, double keep_prob, double scale,
                     const ShardMap& shard, const StridedView& x, const StridedView& out,
                     const StridedView& mask);

// grad_x[i] = grad_out[i] * (mask[i] ? scale : 0); all contiguous.
void dropout_backward(const StridedView& grad_out, const StridedView& mask, double scale,
                      const StridedView& grad_x);
}  // namespace cpu

// The same on CUDA (ops/cuda/dropout.cu), all views contiguous on the device.
namespace cuda {
LUMEN_CUDA_API void dropout_forward(uint64_t seed, uint64_t offset, double keep_prob, double scale,
                                    const ShardMap& shard, const StridedView& x,
                                    const StridedView& out, const StridedView& mask);
LUMEN_CUDA_API void dropout_backward(const StridedView& grad_out, const StridedView& mask,
                                     double scale, const StridedView& grad_x);
}  // namespace cuda

}  // namespace lumen
