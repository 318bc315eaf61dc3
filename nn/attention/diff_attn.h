// Multi-head differential attention (Ye et al., "Differential Transformer", ICLR 2025), in the
// layout of the official microsoft/unilm Diff-Transformer/multihead_diffattn.py (Ye et al. 2025,
// Sec. 2.1): two softmax maps per head, subtracted with one learned scalar lambda, a shared RMSNorm
// over each head's output; optional causal mask and RoPE. Registered as "diff".
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "nn/activation.h"
#include "nn/attention/attention.h"
#include "nn/linear.h"
#include "nn/norm.h"
#include "ops/attention.h"

namespace lumen::nn::attention {

// lambda_init = 0.8 - 0.6 exp(-0.3 layer_index), layer_index 0-based (the official `depth`,
// the paper's l - 1): 0.2, 0.35551, 0.47071, 0.55606, ... Throws [diff] for a negative index.
double diff_lambda_init(int64_t layer_index);

// One of the four lambda vectors (lambda_q1, lambda_k1, lambda_q2, lambda_k2): (head_dim) drawn
// from N(0, 0.1), the official init. Both differential attentions (this one and PVT-GDLA's)
// register theirs from it.
Tensor diff_lambda_vector(int64_t head_dim);

// The reparameterized lambda: exp(sum(q1 * k1)) - exp(sum(q2 * k2)) + lambda_init (0-d).
Tensor diff_lambda(const Tensor& q1, const Tensor& k1, const Tensor& q2, const Tensor& k2,
                   double lambda_init);

struct DiffAttnOptions {
    int64_t layer_index = 0;  // sets lambda_init (diff_lambda_init) unless lambda_init is given
    std::optional<double> lambda_init;
    bool causal = false;  // the official LM default is causal with RoPE; classification is not
    bool rope = false;    // interleaved RoPE (nn/rope.h) on every q and k slot
    double rope_base = 10000.0;
    double attn_drop = 0.0;  // on the fused map P1 - lambda P2 (0 in every DGViT/DGT config)
    double proj_drop = 0.0;
    double subln_eps = 1e-5;
};

// nh differential heads of width d = D / (2 nh), each holding two softmax maps:
//   q = x Wq^T, k = x Wk^T viewed (B, N, 2nh, d): slot 2h = Q1/K1 of head h, 2h+1 = Q2/K2;
//   v = x Wv^T viewed (B, N, nh, 2d); [RoPE on q, k]; P = softmax(q k^T d^-0.5 + mask);
//   lambda = exp(<lambda_q1, lambda_k1>) - exp(<lambda_q2, lambda_k2>) + lambda_init (one
//   scalar for all heads); O_h = RMSNorm_2d(P1 v_h - lambda P2 v_h) * (1 - lambda_init);
//   y = proj_drop(concat_h(O_h) Wo^T).
// A v is computed as P1 v - lambda (P2 v): by default each P v by the fused attention op
// (ops/attention.h), so no N x N map exists at all, with attention dropout as one mask drawn
// for the combined map (B, nh, N, N) and applied to both (the same numbers as dropping the
// combined map, since the mask multiplies entries). The unfused path (fused = false, or
// store_attn) forms both maps.
// Parameters (official names): q_proj, k_proj, v_proj, out_proj .weight (D, D), no biases;
// lambda_q1, lambda_k1, lambda_q2, lambda_k2 (d) ~ N(0, 0.1); subln.weight (2d) = 1.
// Time O(B N^2 D + B N D^2), memory O(B N D) fused, O(B 2nh N^2) unfused. Shapes: x (B, N, D) ->
// (B, N, D).
// Throws [MultiheadDiffAttn] for D not divisible by 2 nh, an odd d with RoPE, or a wrong input
// or mask shape.
class MultiheadDiffAttn : public Attention {
  public:
    MultiheadDiffAttn(int64_t embed_dim, int64_t num_heads, const DiffAttnOptions& options = {});
    using Attention::forward;
    Tensor forward(const Tensor& x, const AttentionContext& context) override;
    // lambda as a 0-d tensor (differentiable in the four lambda vectors).
    Tensor lambda_full() const;
    std::string extra_repr() const override;

    std::shared_ptr<Linear> q_proj, k_proj, v_proj, out_proj;
    Tensor lambda_q1, lambda_k1, lambda_q2, lambda_k2;
    std::shared_ptr<RMSNorm> subln;
    std::shared_ptr<Dropout> attn_drop, proj_drop;
    int64_t embed_dim, num_heads, head_dim;
    double scale, lambda_init;
    DiffAttnOptions options;
    // When set, each forward keeps the fused map P1 - lambda P2 (B, nh, N, N), detached.
    bool store_attn = false;
    Tensor last_attn;
    bool fused = true;  // SoftmaxAttention::fused (nn/attention/mhsa.h)

  private:
    // A v through the two (B, nh, N, N) maps (store_attn keeps the combined one).
    Tensor unfused_mix(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lambda,
                       const AttentionContext& context);
};

// The two maps' products of the differential heads, fused (ops/attention.h): q, k (B, N, 2nh, d)
// with slots 2h, 2h+1 the two maps of head h, v (B, nh, N, 2d); returns (P1 v, P2 v), each
// (B, nh, N, 2d). `drop` (one draw for the (B, nh, N, N) map) drops the same entries of both.
std::pair<Tensor, Tensor> differential_products(const Tensor& q, const Tensor& k, const Tensor& v,
                                                double scale, const Tensor& padding, bool causal,
                                                const AttentionDropout& drop);

// Registry factory for "diff": dim = D, num_heads = nh, layer_index, attn_drop, proj_drop
// (qkv_bias is ignored: the official layout has no projection biases); options causal, rope
// (0/1), rope_base, subln_eps, lambda_init (overrides the layer schedule). Throws [diff] for an
// unknown option or a head_dim check_differential_head_dim rejects.
std::shared_ptr<Attention> make_diff_attention(const AttentionConfig& config);

// The layout fixes d = D / (2 nh), so AttentionConfig::head_dim carries no information for the
// differential variants: it may be -1, D / nh (the channels of a head, 2d: the registry's
// meaning) or D / (2 nh) (the official code's head_dim d). Throws [<who>] for anything else.
void check_differential_head_dim(const AttentionConfig& config, const std::string& who);

}  // namespace lumen::nn::attention
