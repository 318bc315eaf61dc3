// UTNet's efficient multi-head self-attention (Gao et al. 2021, Sec. 2.2; eq. 1-4; official
// LinearAttention / LinearAttentionDecoder): queries at full resolution, keys and values reduced to
// r x r, so time and memory are O(H W r^2), linear in the map size. Also the token-interface form
// "utnet" of nn/attention/attention.h (tokens + grid). The relative position tables are in
// nn/attention/utnet_relative_position.h, the transformer blocks built on the attention in
// nn/utnet/trans_blocks.h.
#pragma once

#include <memory>
#include <string>

#include "nn/activation.h"
#include "nn/attention/attention.h"
#include "nn/attention/utnet_relative_position.h"
#include "nn/conv.h"

namespace lumen::nn::attention {

// The attention's settings (the official constructor's keyword arguments and defaults).
struct LinearAttentionOptions {
    int64_t heads = 4;
    int64_t dim_head = 64;  // inner width D = heads * dim_head
    double attn_drop = 0.0;
    double proj_drop = 0.0;
    int64_t reduce_size = 16;           // r: keys and values are resized to r x r
    std::string projection = "interp";  // "interp" (bilinear, align_corners) or "maxpool"
    bool rel_pos = true;
    std::string rel_pos_type = "bias";  // "bias" (official table) or "embedding" (paper eq. 4)
};

// The output and the attention map A (B, heads, H W, r^2) (after attention dropout).
struct AttentionResult {
    Tensor y, attn;
};

// The part shared by the encoder and decoder attention: given Q (B, D, H, W) at full
// resolution and K, V (B, D, h', w'):
//   K, V <- resize to r x r (skipped when already r x r)
//   head split with the HEAD INDEX FASTEST: channel c = j heads + m belongs to head m
//   A = softmax((Q K^T + P) / sqrt(dim_head)),  P = position bias or relative logits
//   y = proj_drop(to_out(A V merged back to (B, D, H, W)))
// Parameters: to_out.* and relative_position_encoding.* (RelativePositionBias or
// RelativePositionEmbedding); the subclasses add their projections.
class EfficientAttention : public Module {
  public:
    EfficientAttention(const char* type_name, const LinearAttentionOptions& options);
    std::string extra_repr() const override;

    std::shared_ptr<Dropout> attn_drop, proj_drop;
    std::shared_ptr<RelativePositionBias> position_bias;            // rel_pos_type "bias"
    std::shared_ptr<RelativePositionEmbedding> position_embedding;  // "embedding"
    std::shared_ptr<DepthwiseSeparableConv> to_out;
    LinearAttentionOptions options;
    int64_t inner_dim;
    // The fused softmax attention (scaled_dot_product_attention, ops/attention.h: no
    // (H W) x r^2 logits, probabilities or dropout mask kept; the position bias is its
    // differentiable bias) when true; the unfused ops, the reference, when false.
    bool fused = true;
    // Keep A in AttentionResult.attn (the unfused path) where forward returns a result.
    bool store_attn = false;

  protected:
    // The map is computed and returned when keep_map or !fused, else attn is undefined.
    AttentionResult attend(const Tensor& q, const Tensor& k, const Tensor& v, bool keep_map);
};

// Encoder attention: [Q | K | V] = to_qkv(x) (DepthwiseSeparableConv(dim, 3 D)), then as
// EfficientAttention with to_out DepthwiseSeparableConv(D, dim).
// Shapes: x (B, dim, H, W) -> y (B, dim, H, W), attn (B, heads, H W, r^2). With rel_pos, H and
// W must be positive multiples of r. Throws [LinearAttention] for a wrong input shape or bad
// options, [RelativePositionBias] / [RelativePositionEmbedding] for a map that does not fit r.
class LinearAttention : public EfficientAttention {
  public:
    LinearAttention(int64_t dim, const LinearAttentionOptions& options = {});
    // y and the map A (always computed: the unfused path).
    AttentionResult forward_attn(const Tensor& x);
    // y alone (fused unless fused = false or store_attn).
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<DepthwiseSeparableConv> to_qkv;
    int64_t dim;
};

// Decoder attention: queries from the high-resolution skip q (B, out_dim, Hh, Wh), keys and
// values from the low-resolution decoder feature x (B, in_dim, H, W):
//   K, V = split(to_kv(x), 2);  Q = to_q(q);  positions at the query size Hh x Wh.
// Shapes: -> y (B, out_dim, Hh, Wh), attn (B, heads, Hh Wh, r^2) when store_attn or !fused
// (else undefined). Throws [LinearAttentionDecoder] for wrong input shapes.
class LinearAttentionDecoder : public EfficientAttention {
  public:
    LinearAttentionDecoder(int64_t in_dim, int64_t out_dim,
                           const LinearAttentionOptions& options = {});
    AttentionResult forward(const Tensor& q, const Tensor& x);
    using Module::forward;
    std::shared_ptr<DepthwiseSeparableConv> to_kv, to_q;
    int64_t in_dim, out_dim;
};

// UTNet's attention behind the token interface: x (B, N, C) with context.grid = {H, W}
// (N = H W, no prefix tokens) is viewed as the map (B, C, H, W), run through a
// LinearAttention and returned as tokens (B, N, C). Its parameters have LinearAttention's
// names (to_qkv.*, to_out.*, relative_position_encoding.*). Throws [utnet] without a 2-D grid,
// for prefix tokens, a key padding mask or causal attention.
class UTNetAttention : public Attention {
  public:
    UTNetAttention(int64_t dim, const LinearAttentionOptions& options);
    Tensor forward(const Tensor& x, const AttentionContext& context) override;
    using Attention::forward;
    LinearAttention& attention() const { return *inner_; }

  private:
    std::shared_ptr<LinearAttention> inner_;
};

// Registry factory for "utnet": heads = num_heads, dim_head = head_dim (or dim / heads),
// attn_drop, proj_drop, and the options reduce_size (default 8), maxpool (0/1: projection
// "maxpool" instead of "interp"), rel_pos (0/1, default 1), rel_pos_embedding (0/1: the
// paper's relative logits instead of the bias table). qkv_bias is ignored (UTNet's
// projections have no bias). Throws [utnet] for an unknown option.
std::shared_ptr<Attention> make_utnet_attention(const AttentionConfig& config);

}  // namespace lumen::nn::attention
