// Multi-head Differential Gated Self-Attention (M-DGSA, Lygizou et al. 2025, Sec. 4.1-4.2 and
// Algorithm 1; no official code exists, the paper text is followed): the differential head layout
// of MultiheadDiffAttn with the scalar lambda replaced by a per-token, per-head sigmoid gate
// between an excitatory and an inhibitory softmax map, and an optional residual of the raw query
// projection. Registered as "dgsa".
#pragma once

#include <memory>
#include <string>

#include "nn/activation.h"
#include "nn/attention/attention.h"
#include "nn/linear.h"
#include "nn/norm.h"

namespace lumen::nn::attention {

struct DGSAOptions {
    int64_t layer_index = 0;
    double lambda_init = 0.8;      // fixed output scale 1 - lambda_init (the paper's best)
    bool lambda_schedule = false;  // true: lambda_init = diff_lambda_init(layer_index) instead
    bool q_residual = false;       // y += x Wq^T (on in DGViT, off in DGT)
    bool causal = false;
    double attn_drop = 0.0;  // on the fused map (0 in every DGViT/DGT config)
    double proj_drop = 0.0;
    double subln_eps = 1e-5;
};

// nh heads of width d = D / (2 nh), laid out as in MultiheadDiffAttn (slot 2h = Q+/K+, 2h+1 =
// Q-/K-; v (B, N, nh, 2d)):
//   P = softmax(q k^T d^-0.5 + mask): A+ = P[slot 2h], A- = P[slot 2h+1];
//   g = sigmoid(x Wg^T + bg) (B, N, nh): one gate per query row and head;
//   O_h = RMSNorm_2d(g A+ v_h - (1 - g) A- v_h) * (1 - lambda_init);
//   y = proj_drop(concat_h(O_h) Wo^T) [+ x Wq^T when q_residual].
// The gate scales whole query rows, so A v = g (A+ v) - (1 - g) (A- v): by default A+ v and
// A- v come from the fused attention op (ops/attention.h, differential_products), with no
// N x N map and one dropout mask for both (the combined map's); the unfused path (fused =
// false, or store_attn) forms the maps, and the combined one g A+ - (1 - g) A- (rows sum to
// 2g - 1) for dropout or store_attn.
// Parameters: q_proj, k_proj, v_proj, out_proj .weight (D, D) without biases; gate_proj.weight
// (nh, D), gate_proj.bias (nh); subln.weight (2d) = 1. Time O(B N^2 D + B N D^2), memory
// O(B N D) fused, O(B 2nh N^2) unfused. Shapes: x (B, N, D) -> (B, N, D). Throws
// [MultiheadDGSA] for D not divisible by 2 nh, or a wrong input or mask shape.
class MultiheadDGSA : public Attention {
  public:
    MultiheadDGSA(int64_t embed_dim, int64_t num_heads, const DGSAOptions& options = {});
    using Attention::forward;
    Tensor forward(const Tensor& x, const AttentionContext& context) override;
    std::string extra_repr() const override;

    std::shared_ptr<Linear> q_proj, k_proj, v_proj, gate_proj, out_proj;
    std::shared_ptr<RMSNorm> subln;
    std::shared_ptr<Dropout> attn_drop, proj_drop;
    int64_t embed_dim, num_heads, head_dim;
    double scale, lambda_init;
    DGSAOptions options;
    // When set, each forward keeps the fused map g A+ - (1 - g) A- (B, nh, N, N), detached.
    bool store_attn = false;
    Tensor last_attn;
    bool fused = true;  // SoftmaxAttention::fused (nn/attention/mhsa.h)
};

// Registry factory for "dgsa": dim = D, num_heads = nh, layer_index, attn_drop, proj_drop
// (qkv_bias is ignored; head_dim as check_differential_head_dim); options lambda_init (0.8),
// lambda_schedule, q_residual, causal (0/1), subln_eps. Throws [dgsa] for an unknown option.
std::shared_ptr<Attention> make_dgsa_attention(const AttentionConfig& config);

}  // namespace lumen::nn::attention
