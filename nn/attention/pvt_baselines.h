// The softmax mixers of the PVT-SelfAttn and PVT-DiffAttn decoders (Zheng et al. 2026, Sec. 4
// baselines; official modules/attn/mhsa.py, mhda.py): one fused qkv projection with bias, optional
// 1-D interleaved RoPE over the flattened token index (nn/rope.h). They differ from the
// Differential Transformer's (diff_attn.h) MHSA / MultiheadDiffAttn in layout and names, hence
// separate classes, registered as "pvt_sa" and "pvt_da".
#pragma once

#include <memory>
#include <string>

#include "nn/attention/attention.h"
#include "nn/linear.h"
#include "nn/norm.h"

namespace lumen::nn::attention {

// MultiHeadSelfAttn(dim = C, n_heads = h, qkv_bias, use_rope, rope_base):
//   [q | k | v] = qkv(x), heads of dh = C / h consecutive channels; RoPE (D = dh) on q, k;
//   y = out_proj(concat_h softmax(q_h k_h^T dh^-1/2) v_h).
// Parameters: qkv.weight (3C, C), qkv.bias (3C, if qkv_bias), out_proj.weight (C, C),
// out_proj.bias (C). Time O(N^2 C + N C^2), memory O(N C) (fused). Shapes: x (B, N, C) -> (B, N,
// C); a key_padding_mask or causal context masks the scores. Throws [MultiHeadSelfAttn] for C not
// divisible by h, an odd dh with RoPE, or a wrong input shape.
class MultiHeadSelfAttn : public Attention {
  public:
    MultiHeadSelfAttn(int64_t dim, int64_t n_heads, bool qkv_bias = true, bool use_rope = false,
                      double rope_base = 10000.0);
    using Attention::forward;
    Tensor forward(const Tensor& x, const AttentionContext& context) override;
    std::string extra_repr() const override;

    std::shared_ptr<Linear> qkv, out_proj;
    int64_t dim, n_heads, head_dim;
    bool use_rope;
    double rope_base;
    bool fused = true;  // SoftmaxAttention::fused (nn/attention/mhsa.h)
};

// lambda_init = 0.8 - 0.6 exp(-0.3 depth) with the official depth 3, 2, 1 of de1, de2, de3
// (as the official code sets it): 0.5561, 0.4707, 0.3555. Throws [MultiHeadDiffAttn] for a
// negative depth.
double pvt_lambda_init(int64_t depth);

// MultiHeadDiffAttn(dim = C, n_heads = h, depth, qkv_bias, use_rope, rope_base), dh = C / h,
// d = dh / 2: q and k of qkv(x) are viewed as 2h sub-heads of d channels (sub-head 2j = first
// half of head j, 2j + 1 = second half), v as h heads of dh; RoPE (D = d) on q, k;
//   A_{j,i} = softmax(q_{2j+i} k_{2j+i}^T / sqrt(d)),
//   lambda = exp(<lambda_q1, lambda_k1>) - exp(<lambda_q2, lambda_k2>) + lambda_init,
//   head_j = (1 - lambda_init) RMSNorm_dh((A_{j,0} - lambda A_{j,1}) v_j)   (subln, eps 1e-5),
//   out = out_proj(concat heads), out_proj without bias.
// A v is formed as A_0 v - lambda (A_1 v), each product by the fused attention op (no N x N
// map at all; fused = false: both maps, never their combination).
// Parameters: qkv.weight (3C, C), qkv.bias (3C), lambda_q1, lambda_k1, lambda_q2, lambda_k2
// (dh) ~ N(0, 0.1^2), subln.weight (dh), out_proj.weight (C, C). Time O(N^2 C + N C^2).
// Shapes: x (B, N, C) -> (B, N, C); masks as MultiHeadSelfAttn. Throws [MultiHeadDiffAttn] for
// an odd dh, an odd d with RoPE, or a wrong input shape.
class MultiHeadDiffAttn : public Attention {
  public:
    MultiHeadDiffAttn(int64_t dim, int64_t n_heads, int64_t depth, bool qkv_bias = true,
                      bool use_rope = false, double rope_base = 10000.0);
    using Attention::forward;
    Tensor forward(const Tensor& x, const AttentionContext& context) override;
    // lambda as a 0-d tensor, differentiable in the four lambda vectors.
    Tensor lambda_full() const;
    std::string extra_repr() const override;

    std::shared_ptr<Linear> qkv, out_proj;
    Tensor lambda_q1, lambda_k1, lambda_q2, lambda_k2;
    std::shared_ptr<RMSNorm> subln;
    int64_t dim, n_heads, head_dim, depth;
    double lambda_init;
    bool use_rope;
    double rope_base;
    bool fused = true;  // SoftmaxAttention::fused (nn/attention/mhsa.h)
};

// Registry factory for "pvt_sa": dim, num_heads (head_dim -1 or dim / num_heads), qkv_bias;
// options rope (0/1), rope_base. Throws [pvt_sa] for an unknown option.
std::shared_ptr<Attention> make_pvt_sa_attention(const AttentionConfig& config);
// Registry factory for "pvt_da": as "pvt_sa" plus option depth (default layer_index), which
// sets lambda_init. Throws [pvt_da] for an unknown option.
std::shared_ptr<Attention> make_pvt_da_attention(const AttentionConfig& config);

}  // namespace lumen::nn::attention
