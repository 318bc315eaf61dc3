// Internal: the kernels of max, average and adaptive pooling (2-D and 3-D alike), on the CPU
// (ops/cpu/pool.cpp) and on CUDA (ops/cuda/pool.cu) with the same signatures. A 2-D pool is a
// 3-D pool with depth 1 and a kernel depth of 1.
#pragma once

#include <cstdint>

#include "core/cuda_guard.h"
#include "core/strided.h"

namespace lumen {

// A pooling problem as the kernels see it: `planes` independent (D, H, W) volumes, stored
// contiguously one after the other (planes = N * C, or C for an unbatched input). kernel,
// stride, padding and dilation are per spatial dim (D, H, W); the adaptive pools ignore them
// and set `adaptive` (the CUDA max-pool backward needs to know which windows the indices came
// from; the CPU kernels do not look at it).
struct PoolGeometry {
    int64_t planes = 1;
    int64_t in[3] = {1, 1, 1};
    int64_t out[3] = {1, 1, 1};
    int64_t kernel[3] = {1, 1, 1};
    int64_t stride[3] = {1, 1, 1};
    int64_t padding[3] = {0, 0, 0};
    int64_t dilation[3] = {1, 1, 1};
    bool adaptive = false;
};

// All views are contiguous: x and grad_x (planes, D, H, W); y, grad_out and indices
// (planes, outD, outH, outW). Values are float32 or float64 (all the same dtype); indices are
// int64, the flat position (d * H + h) * W + w of the chosen element inside its plane, as in
// PyTorch. NaN counts as larger than everything.
namespace cpu {

// y = max over each (dilated, zero-padding-free) window; indices = its position.
void max_pool_forward(const StridedView& x, const StridedView& y, const StridedView& indices,
                      const PoolGeometry& geometry);
// y = max over the adaptive cells [floor(i * in / out), ceil((i + 1) * in / out)) per dim.
void adaptive_max_pool_forward(const StridedView& x, const StridedView& y,
                               const StridedView& indices, const PoolGeometry& geometry);
// grad_x = 0, then grad_x[plane, indices[o]] += grad_out[o] (max and adaptive max pools).
void max_pool_backward(const StridedView& grad_out, const StridedView& indices,
                       const StridedView& grad_x, const PoolGeometry& geometry);

// y = sum over the window / divisor. The divisor is divisor_override when it is not 0, else the
// window size clipped to the padded input (count_include_pad) or to the input itself.
void avg_pool_forward(const StridedView& x, const StridedView& y, const PoolGeometry& geometry,
                      bool count_include_pad, int64_t divisor_override);
// grad_x = 0, then every input of a window gets grad_out / divisor.
void avg_pool_backward(const StridedView& grad_out, const StridedView& grad_x,
                       const PoolGeometry& geometry, bool count_include_pad,
                       int64_t divisor_override);

// y = mean over the adaptive cells; backward spreads grad_out / cell size over each cell.
void adaptive_avg_pool_forward(const StridedView& x, const StridedView& y,
                               const PoolGeometry& geometry);
void adaptive_avg_pool_backward(const StridedView& grad_out, const StridedView& grad_x,
                                const PoolGeometry& geometry);

}  // namespace cpu

// The same kernels on the tensors' CUDA device (ops/cuda/pool.cu), float32 and float64. The
// backward kernels gather (one thread per input element sums the windows that cover it, in
// the CPU's order), so they are deterministic and need no atomics.
namespace cuda {
LUMEN_CUDA_API void max_pool_forward(const StridedView& x, const StridedView& y,
                                     const StridedView& indices, const PoolGeometry& geometry);
LUMEN_CUDA_API void adaptive_max_pool_forward(const StridedView& x, const StridedView& y,
                                              const StridedView& indices,
                                              const PoolGeometry& geometry);
LUMEN_CUDA_API void max_pool_backward(const StridedView& grad_out, const StridedView& indices,
                                      const StridedView& grad_x, const PoolGeometry& geometry);
LUMEN_CUDA_API void avg_pool_forward(const StridedView& x, const StridedView& y,
                                     const PoolGeometry& geometry, bool count_include_pad,
                                     int64_t divisor_override);
LUMEN_CUDA_API void avg_pool_backward(const StridedView& grad_out, const StridedView& grad_x,
                                      const PoolGeometry& geometry, bool count_include_pad,
                                      int64_t divisor_override);
LUMEN_CUDA_API void adaptive_avg_pool_forward(const StridedView& x, const StridedView& y,
                                              const PoolGeometry& geometry);
LUMEN_CUDA_API void adaptive_avg_pool_backward(const StridedView& grad_out,
                                               const StridedView& grad_x,
                                               const PoolGeometry& geometry);
}  // namespace cuda

}  // namespace lumen
