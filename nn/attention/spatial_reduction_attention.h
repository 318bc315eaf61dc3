// PVTv2 spatial-reduction attention (Wang et al. 2022, "PVT v2"; timm pvt_v2.Attention): softmax
// attention whose keys and values come from a spatially reduced copy of the token map (an r x r
// strided conv, or the "-li" 7x7 adaptive average pool + 1x1 conv + GELU), registered as "pvt_sra",
// and the tokens <-> NCHW map helpers (shared with the PVT and GDLA blocks). The PVT blocks and
// stages built on it are in nn/pvt/pvt_blocks.h.
#pragma once

#include <memory>
#include <string>

#include "nn/activation.h"
#include "nn/attention/attention.h"
#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/norm.h"

namespace lumen::nn::attention {

// Shapes: tokens (B, H*W, C) <-> map (B, C, H, W), token n = i W + j is pixel (i, j).
// tokens_to_map copies (a conv needs NCHW); map_to_tokens is a transposed view. Throw
// [tokens_to_map] / [map_to_tokens] when N != H W or the ranks are wrong.
Tensor tokens_to_map(const Tensor& tokens, int64_t height, int64_t width);
Tensor map_to_tokens(const Tensor& map);

// The K/V source of SRAttention for a (height, width) grid: the number of key tokens M.
// sr_ratio > 1: floor(H / r) * floor(W / r); linear: 49; otherwise H * W.
int64_t reduced_tokens(int64_t height, int64_t width, int64_t sr_ratio, bool linear);

// timm pvt_v2.Attention:
//   q   = x Wq^T + bq, split into nh heads of Hd = C / nh consecutive channels
//   src = x                                                  (sr_ratio 1, not linear)
//       = LN(conv_rxr_stride_r(x as map) as tokens)          (sr_ratio r > 1; floor division)
//       = GELU(LN(conv_1x1(adaptive_avg_pool(x map, 7)) as tokens))     (linear, "-li")
//   k|v = src Wkv^T + bkv (channels [0, C) are k, [C, 2C) are v), heads as q
//   y   = proj(concat_heads(softmax(q k^T Hd^-1/2) v))
// LN has eps 1e-5. Parameters: q.{weight (C, C), bias}, kv.{weight (2C, C), bias} (biases
// absent without qkv_bias), proj.{weight, bias}, and sr.{weight (C, C, r, r) or (C, C, 1, 1),
// bias (C)}, norm.{weight, bias} (C) when sr_ratio > 1 or linear. With `linear` the sr_ratio is
// ignored (timm builds the pooled branch only). Cost O(B N M C) for the attention with
// M = reduced_tokens(...) keys, plus O(B N C^2) projections: never an N x N tensor.
// Prefix tokens (a class token; context.prefix_tokens P, first in x) are queries like the
// others and join the keys and values unreduced, src = cat(prefix tokens, reduced grid): they
// have no place on the map to pool. With sr_ratio 1 that is plain attention over all tokens,
// where PVT v1 keeps its class token (last stage).
// Shapes: x (B, N, C) with N = P + H * W, H and W from context.grid -> (B, N, C).
// Throws [SRAttention] for a wrong shape, a missing or mismatched grid, a key padding mask or
// causal masking (the keys are pooled, not tokens), or sr_ratio larger than the grid.
class SRAttention : public Attention {
  public:
    SRAttention(int64_t dim, int64_t num_heads, int64_t sr_ratio = 1, bool linear = false,
                bool qkv_bias = true, double attn_drop = 0.0, double proj_drop = 0.0);
    using Attention::forward;
    Tensor forward(const Tensor& x, const AttentionContext& context) override;
    // The same on an explicit grid after `prefix_tokens` tokens.
    Tensor forward(const Tensor& x, int64_t height, int64_t width, int64_t prefix_tokens = 0);
    std::string extra_repr() const override;

    std::shared_ptr<Linear> q, kv, proj;
    std::shared_ptr<Dropout> attn_drop, proj_drop;  // on the softmax map and the output
    std::shared_ptr<Conv2d> sr;                     // null for sr_ratio 1 without linear
    std::shared_ptr<LayerNorm> norm;                // likewise
    int64_t dim, num_heads, head_dim, sr_ratio;
    bool linear;
    bool fused = true;  // SoftmaxAttention::fused (nn/attention/mhsa.h)

  private:
    // The K/V source tokens (B, P + M, C) of x (B, P + H*W, C).
    Tensor reduce(const Tensor& x, int64_t height, int64_t width, int64_t prefix_tokens);
};

// Registry factory for "pvt_sra": dim, num_heads (head_dim must be -1 or dim / num_heads),
// qkv_bias, attn_drop, proj_drop; options "sr_ratio" (default 1) and "linear" (0/1). Throws
// [pvt_sra] for an unknown option, a non-integer sr_ratio or a head_dim other than dim / num_heads.
std::shared_ptr<Attention> make_pvt_sra_attention(const AttentionConfig& config);

}  // namespace lumen::nn::attention
