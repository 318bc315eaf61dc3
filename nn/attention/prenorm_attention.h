// The attention frame of lucidrains/vit-pytorch (vit.py @3e5d1be), shared by the three attentions
// of Khader et al. (Sec. 2.1): the LayerNorm lives inside the attention, to_qkv has no bias, to_out
// = Linear + Dropout. The token mixes are in prenorm_softmax_attention.h, seqnorm_attention.h and
// vitpt_sima_attention.h; the head split/merge helpers are here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/attention/attention.h"
#include "nn/linear.h"
#include "nn/norm.h"

namespace lumen::nn::attention {

// Shapes: t (B, N, heads * d) -> (B, heads, N, d), feature f = m * d + j going to head m,
// channel j. A view (no copy): matmul takes the strided result as it is.
Tensor split_heads(const Tensor& t, int64_t heads);
// Shapes: t (B, heads, N, d) -> (B, N, heads * d), the inverse of split_heads (one copy).
Tensor merge_heads(const Tensor& t);

// D' = dim is the token width, D = heads * dim_head the width of Q, K, V (D != D' allowed).
struct PreNormAttentionOptions {
    int64_t heads = 8;
    int64_t dim_head = 64;
    bool qkv_bias = false;   // vit-pytorch has none; true adds to_qkv.bias
    double attn_drop = 0.0;  // on the softmax weights (softmax variant only)
    double proj_drop = 0.0;  // after to_out.0
};

// y = to_out(merge(mix(split(to_qkv(LayerNorm(x)))))), parameters norm.weight/bias (D'),
// to_qkv.weight (3D, D'), to_out.0.weight (D', D), to_out.0.bias (D'); to_out is the identity
// (no parameters) when heads == 1 and dim_head == dim, as in vit-pytorch. LayerNorm eps 1e-5.
// Shapes: x (B, N, D') -> (B, N, D'). The context's grid is not needed; a key padding mask or
// causal = true throws [<type>] (the softmax-free mixes have no weights to mask). Throws
// [<type>] for an input that is not (B, N, D') with N >= 1, and for non-positive sizes.
class PreNormAttention : public Attention {
  public:
    PreNormAttention(const char* type_name, int64_t dim, const PreNormAttentionOptions& options);
    using Attention::forward;
    Tensor forward(const Tensor& x, const AttentionContext& context) override;
    std::string extra_repr() const override;

    std::shared_ptr<LayerNorm> norm;
    std::shared_ptr<Linear> to_qkv;
    std::shared_ptr<Module> to_out;  // Sequential(Linear, Dropout) or Identity
    int64_t dim, heads, dim_head, inner_dim;

  protected:
    // qkv (B, N, 3D) with Q, K, V consecutive along the features -> merged heads (B, N, D).
    virtual Tensor mix(const Tensor& qkv) = 0;
};

// The frame's settings from a registry config: heads = num_heads, dim_head = head_dim (or
// dim / num_heads when head_dim is -1), qkv_bias, attn_drop, proj_drop. Throws [<name>] when
// dim is not divisible by num_heads and head_dim is not given, or for an entry of
// config.options not in `known_options`.
PreNormAttentionOptions prenorm_options(const AttentionConfig& config, const char* name,
                                        const std::vector<std::string>& known_options = {});

}  // namespace lumen::nn::attention
