// Internal: the random kernel signatures and how many Philox blocks each op consumes. Every
// kernel fills element i from philox4x32(seed, offset + block(i)) alone, so any split of the
// work over threads (or a CUDA grid) gives the same numbers. Mapping of elements to blocks:
//   rand float32, bernoulli float32: block i / 4, word i % 4 (24-bit uniform_float)
//   rand float64, bernoulli float64: block i / 2, words 2 (i % 2) and 2 (i % 2) + 1 (53 bits)
//   randn: elements 2j and 2j + 1 from block j by Box-Muller (all 4 words)
//   randint: block i / 2, words 2 (i % 2) and 2 (i % 2) + 1 as one 64-bit integer
#pragma once

#include <cstdint>

#include "core/cuda_guard.h"
#include "core/dtype.h"
#include "core/strided.h"

namespace lumen {

// Elements per Philox block of the uniform kernels: 4 for float32 (one 32-bit word each), 2
// for float64 and for the 64-bit integers of randint.
inline int64_t uniform_per_block(DType dtype) { return dtype == DType::float64 ? 2 : 4; }

// Philox blocks used by `numel` elements at `per_block` elements each. The op advances its
// generator by this count, so the next call starts on a fresh block.
inline uint64_t philox_blocks(int64_t numel, int64_t per_block) {
    return uint64_t((numel + per_block - 1) / per_block);
}

namespace cpu {

// All outputs are contiguous CPU views; `offset` is the generator's first block.
// out = uniform on [0, 1); float32 or float64.
void rand_forward(uint64_t seed, uint64_t offset, const StridedView& out);
// out = standard normal (Box-Muller in double precision); float32 or float64.
void randn_forward(uint64_t seed, uint64_t offset, const StridedView& out);
// out = integers uniform on [low, high), high > low; float32/float64/int64/int32/uint8. The
// value is low + floor(x * range / 2^64) for a 64-bit x (Lemire's multiply-shift without
// rejection): its bias is below range / 2^64, far beneath any statistical test.
void randint_forward(uint64_t seed, uint64_t offset, int64_t low, int64_t high,
                     const StridedView& out);
// out[i] = uniform_i < p[i] ? 1 : 0 with uniform_i drawn as rand_forward does for p's dtype
// (float32 or float64); p contiguous, out contiguous of any numeric dtype or bool, same shape.
// Returns -1, or the lowest index i whose p[i] is outside [0, 1] or NaN (the op then throws).
int64_t bernoulli_forward(uint64_t seed, uint64_t offset, const StridedView& p,
                          const StridedView& out);
// Same with one probability for every element; `precision` (float32 or float64) picks the
// uniform draw.
void bernoulli_scalar_forward(uint64_t seed, uint64_t offset, double p, DType precision,
                              const StridedView& out);

}  // namespace cpu

// The same kernels on CUDA (ops/cuda/random.cu), outputs contiguous on the device: element i
// comes from the same Philox words by the same formulas (core/philox.h), so rand, randint and
// bernoulli are bit-identical to the CPU's; randn may differ in the last bits of the double
// (the device's log / sin / cos are not glibc's). bernoulli_forward reports the same first
// invalid index (one small device-to-host copy).
namespace cuda {
LUMEN_CUDA_API void rand_forward(uint64_t seed, uint64_t offset, const StridedView& out);
LUMEN_CUDA_API void randn_forward(uint64_t seed, uint64_t offset, const StridedView& out);
LUMEN_CUDA_API void randint_forward(uint64_t seed, uint64_t offset, int64_t low, int64_t high,
                                    const StridedView& out);
LUMEN_CUDA_API int64_t bernoulli_forward(uint64_t seed, uint64_t offset, const StridedView& p,
                                         const StridedView& out);
LUMEN_CUDA_API void bernoulli_scalar_forward(uint64_t seed, uint64_t offset, double p,
                                             DType precision, const StridedView& out);
}  // namespace cuda

}  // namespace lumen
