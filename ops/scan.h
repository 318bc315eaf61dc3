// The Mamba selective scan (state-spaces/mamba `selective_scan_ref` semantics, real A,
// input-dependent B and C), one autograd node with a dedicated backward kernel. The math:
// Gu & Dao, "Mamba: Linear-Time Sequence Modeling with Selective State Spaces", Alg. 2.
#pragma once

#include "core/tensor.h"

namespace lumen {

// Shapes: u, delta, z (B, D, L); A (D, N); Bm, Cm (B, N, L) or grouped (B, G, N, L) with
// D % G == 0 (channel d reads group d / (D / G)); D, delta_bias (D).
//   dt_t   = delta_t + delta_bias, then softplus(dt_t) when delta_softplus
//   h_t[n] = exp(dt_t A[n]) h_{t-1}[n] + dt_t Bm_t[n] u_t,   h_{-1} = 0
//   y_t    = sum_n h_t[n] Cm_t[n] + D u_t,   then y_t * silu(z_t) when z is given
// per (batch, channel). Returns y (B, D, L) in the inputs' dtype (float32 or float64, all the
// same; CPU or CUDA, all on one device). D, z and delta_bias are optional (undefined Tensor).
// CPU: sequential in L, parallel over B x D; backward recomputes the states of one (batch,
// channel) at a time (O(L N) scratch per thread). CUDA: a chunked scan, parallel over B x D x
// N x L/64, N <= 256 (ops/cuda/scan.cu). Gradients for every input. Throws [selective_scan]
// for a wrong rank, shape, dtype or device, naming the offending shapes.
Tensor selective_scan(const Tensor& u, const Tensor& delta, const Tensor& A, const Tensor& Bm,
                      const Tensor& Cm, const Tensor& D = Tensor(), const Tensor& z = Tensor(),
                      const Tensor& delta_bias = Tensor(), bool delta_softplus = false);

}  // namespace lumen
