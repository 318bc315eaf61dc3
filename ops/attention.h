// Fused scaled dot-product attention without the N x M score map (FlashAttention-2: Dao, 2023,
// "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning", Alg. 1
// and 2). The forward runs over tiles of keys with an online softmax and keeps only the
// per-row log-sum-exp; the backward recomputes each tile's probabilities from it. Memory is
// O(N D) instead of O(N M) in both passes.
//
//   out = dropout(softmax(scale q k^T + bias, masked causally)) v
//
// with the dropout mask of dropout() applied to the (..., N, M) map itself (same generator
// draw, same mask element for element), so the fused and the unfused paths give the same
// numbers. The unfused composition (matmul, softmax, dropout, matmul) stays the reference:
// tests/ops/test_attention.cpp compares the two.
#pragma once

#include <cstdint>

#include "core/random.h"
#include "core/tensor.h"

namespace lumen {

// The dropout of an attention map: probability p and the Philox (seed, offset) that
// dropout(map) would use; entry (e, i, j) of the (..., N, M) map (e the row-major batch
// index) is element (e N + i) M + j of that draw. p = 0 is no dropout.
struct AttentionDropout {
    double p = 0.0;
    uint64_t seed = 0, offset = 0;
};

// Draws what dropout(map, p, true, generator) of a map of `map_numel` elements in `dtype` would
// draw (advances the generator the same way). Two calls of the fused op given the same draw
// drop the same entries (the differential attentions drop their fused map once).
AttentionDropout draw_attention_dropout(double p, int64_t map_numel, DType dtype,
                                        Generator* generator = nullptr);

struct AttentionOptions {
    double scale = -1.0;  // < 0: 1 / sqrt(D)
    // Added to the scores; broadcastable to (..., N, M) (a key padding mask as (B, 1, 1, M)
    // with -inf, Swin's relative position bias and shift mask as (1, nW, H, N, M)).
    // Differentiable: its gradient is summed over the broadcast dims.
    Tensor bias;
    bool causal = false;  // key j > query i is masked (needs N == M)
    AttentionDropout dropout;
};

// q (..., N, D), k (..., M, D), v (..., M, Dv) with the same batch dims (at least one), one
// float dtype and device. Returns (..., N, Dv), differentiable in q, k, v and bias. A row whose
// scores are all -inf gives NaN, as softmax does. float32/float64 on CPU and CUDA.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& options = {});

// The unfused reference of the same computation (materialises the map): matmul, add, softmax,
// dropout with the same mask, matmul.
Tensor attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                           const AttentionOptions& options = {});

}  // namespace lumen
