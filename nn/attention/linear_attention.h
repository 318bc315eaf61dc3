// Kernelized linear attention (Katharopoulos et al. 2020, non-causal) as PVT-GDLA defines it (Zheng
// et al. 2026, Sec. 3.1.2, eqs. 10-13): the feature map elu + 1, the function linear_attention and
// the multi-head mixer of PVT-LinearAttn (official MultiHeadLinearAttn), registered as "linear".
// The GDLA mixer that builds on the function is in nn/attention/gdla.h.
#pragma once

#include <memory>
#include <string>

#include "nn/attention/attention.h"
#include "nn/linear.h"
#include "ops/linear_attention.h"

namespace lumen::nn::attention {

// phi(x) = elu(x) + 1 (alpha = 1): > 0 everywhere, phi'(x) = 1 for x > 0 and e^x otherwise.
Tensor elu_feature_map(const Tensor& x);

// y_n = (phi(q_n) . KV) / (phi(q_n) . s + eps), KV = phi(K)^T V, s = phi(K)^T 1, with eps added
// to the denominator only: lumen::linear_attention (ops/linear_attention.h), fused on the CPU,
// with linear_attention_reference as the composition of ops. O(N dk dv) time and no N x M
// matrix. Shapes: q (..., N, dk), k (..., M, dk), v (..., M, dv) -> (..., N, dv), batch dims
// broadcast.
using lumen::linear_attention;
using lumen::linear_attention_reference;

// PVT-LinearAttn's mixer: [q | k | v] = qkv(x) (channel blocks of C, heads of dh = C / h
// consecutive channels), y_h = linear_attention(q_h, k_h, v_h, eps) with no 1/sqrt(dh) scale,
// out = out_proj(concat_h y_h). Parameters: qkv.weight (3C, C), qkv.bias (3C, if qkv_bias),
// out_proj.weight (C, C), out_proj.bias (C); PyTorch default init. Time O(N C^2 + N C dh),
// memory O(N C). Shapes: x (B, N, C) -> (B, N, C); the context's grid is not needed.
// Throws [MultiHeadLinearAttn] for C not divisible by h, a wrong input shape, a key padding
// mask or causal attention (not part of the spec).
class MultiHeadLinearAttn : public Attention {
  public:
    MultiHeadLinearAttn(int64_t dim, int64_t n_heads, bool qkv_bias = true, double eps = 1e-6);
    using Attention::forward;
    Tensor forward(const Tensor& x, const AttentionContext& context) override;
    std::string extra_repr() const override;

    std::shared_ptr<Linear> qkv, out_proj;
    int64_t dim, n_heads, head_dim;
    double eps;
    // The fused op (default) or, when false, linear_attention_reference: the same numbers to
    // rounding, kept as the reference (tests/nn/test_fused_attention.cpp).
    bool fused = true;
};

// Throws [<who>] when the context asks for a key padding mask or causal attention, which the
// linear mixers of PVT-GDLA do not define.
void check_unmasked(const AttentionContext& context, const std::string& who);

// Registry factory for "linear": dim, num_heads (head_dim must be -1 or dim / num_heads),
// qkv_bias; option eps (default 1e-6). Throws [linear] for an unknown option.
std::shared_ptr<Attention> make_linear_attention(const AttentionConfig& config);

}  // namespace lumen::nn::attention
