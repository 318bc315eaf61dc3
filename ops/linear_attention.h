// Fused kernelized linear attention (Katharopoulos et al. 2020, "Transformers are RNNs", eq. 6;
// PVT-GDLA's linear attention, Zheng et al. 2026, Sec. 3.1.2, eqs. 10-13):
//
//   y_n = phi(q_n) S / (phi(q_n) . z + eps),   S = phi(K)^T V (dk x dv),   z = phi(K)^T 1 (dk),
//   phi(x) = elu(x) + 1  (e^x for x <= 0, x + 1 above, so phi'(x) = min(phi(x), 1)).
//
// One pass per (batch element): phi of the keys, the dk x dv state and the normaliser, then
// every query row; the backward recomputes them from q, k, v and the output instead of keeping
// the composed path's phi(q), phi(k), numerator and denominator (four N-sized intermediates).
// Never an N x M matrix. The composition of ops (linear_attention_reference) stays the
// reference; tests/ops/test_linear_attention.cpp compares the two.
#pragma once

#include "core/tensor.h"

namespace lumen {

// q (..., N, dk), k (..., M, dk), v (..., M, dv), batch dims broadcast (GDLA shares v between
// its two maps), one float dtype (float32 or float64) and device; eps >= 0 is added to the
// denominator. Returns (batch..., N, dv), differentiable in q, k and v. The CPU runs the fused
// kernel; CUDA runs the reference composition (no fused CUDA kernel yet).
Tensor linear_attention(const Tensor& q, const Tensor& k, const Tensor& v, double eps = 1e-6);

// The same from matmul, sum, elu, add and div: phi(q) (phi(k)^T v) / (phi(q) phi(k)^T 1 + eps).
Tensor linear_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                  double eps = 1e-6);

}  // namespace lumen
