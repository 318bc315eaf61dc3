// Internal: the kernels of softmax and log_softmax, on the CPU (ops/cpu/softmax.cpp) and on
// CUDA (ops/cuda/softmax.cu). They see the problem as (outer, length, inner) over contiguous
// tensors, length being the size of the softmax dim.
#pragma once

#include "core/cuda_guard.h"
#include "core/strided.h"

namespace lumen {
namespace cpu {

// y = softmax(x) along `dim` (log_softmax when `log`), the row max subtracted first. x and y
// are contiguous, of the same shape, float32 or float64.
void softmax_forward(const StridedView& x, const StridedView& y, int dim, bool log);

// grad_x from the forward's output y and grad_out (all contiguous, same shape and dtype):
//   softmax:     grad_x = y * (grad_out - sum(grad_out * y))
//   log_softmax: grad_x = grad_out - exp(y) * sum(grad_out)
// with the sums along `dim`.
void softmax_backward(const StridedView& y, const StridedView& grad_out, const StridedView& grad_x,
                      int dim, bool log);

}  // namespace cpu

// The same kernels on the tensors' CUDA device: float32, float64 and float16/bfloat16
// (computed in float).
namespace cuda {
LUMEN_CUDA_API void softmax_forward(const StridedView& x, const StridedView& y, int dim, bool log);
LUMEN_CUDA_API void softmax_backward(const StridedView& y, const StridedView& grad_out,
                                     const StridedView& grad_x, int dim, bool log);
}  // namespace cuda

}  // namespace lumen
