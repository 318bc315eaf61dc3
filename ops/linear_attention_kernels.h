// Internal: the CPU kernel of the fused linear attention (ops/linear_attention.h).
//
// q, k, v are StridedViews of rank r >= 3 whose first r - 2 dims are the (broadcast) batch dims
// of the problem (stride 0 where broadcast) and whose last two dims are (rows, features) with
// any strides; out, grad_out and the gradients are contiguous with the full batch shape.
#pragma once

#include <cstdint>

#include "core/strided.h"

namespace lumen {

struct LinearAttentionProblem {
    int64_t batch = 1;  // product of the batch dims
    int64_t n = 0, m = 0, dk = 0, dv = 0;
    double eps = 1e-6;
};

namespace cpu {
void linear_attention_forward(const LinearAttentionProblem& p, const StridedView& q,
                              const StridedView& k, const StridedView& v, const StridedView& out);
// grad_q, grad_k, grad_v (full batch shape) from the inputs, the output and grad_out.
void linear_attention_backward(const LinearAttentionProblem& p, const StridedView& q,
                               const StridedView& k, const StridedView& v, const StridedView& out,
                               const StridedView& grad_out, const StridedView& grad_q,
                               const StridedView& grad_k, const StridedView& grad_v);
}  // namespace cpu

}  // namespace lumen
