// Multi-head softmax self-attention in timm's `Attention` layout (the ViT baseline of Lygizou et
// al. 2025), registered as "mhsa", and the masked softmax-weights step that the differential
// variants (diff.h, dgsa.h) share with it: scores (q * scale) k^T plus an additive -inf bias for
// padded keys and the causal triangle, softmaxed over the keys.
#pragma once

#include <memory>
#include <string>

#include "nn/activation.h"
#include "nn/attention/attention.h"
#include "nn/linear.h"
#include "ops/attention.h"

namespace lumen::nn::attention {

// The additive score bias of `context`, broadcastable to (B, heads, N, N): 0 where a query may
// look, -inf at padded keys (key_padding_mask (B, N) bool, true = padded) and, when `causal`,
// above the diagonal (key j > query i). Shapes (B, 1, 1, N), (N, N) or (B, 1, N, N); an
// undefined Tensor when nothing is masked. Throws [<who>] for a mask that is not (B, N) bool on
// `device`.
Tensor attention_score_bias(const AttentionContext& context, bool causal, int64_t batch, int64_t n,
                            DType dtype, Device device, const std::string& who);

// softmax((q * scale) k^T + bias) over the keys. Shapes: q (..., N, d), k (..., M, d), bias
// broadcastable to (..., N, M) or undefined -> (..., N, M). q and k may be strided views; q is
// scaled (N x d) rather than the scores (N x M). A row whose keys are all masked gives NaN.
Tensor softmax_attention_weights(const Tensor& q, const Tensor& k, double scale,
                                 const Tensor& bias);

// What attend() computes: dropout(softmax(scale q k^T + bias, causal)) v.
struct SoftmaxAttention {
    double scale = 1.0;
    Tensor bias;          // broadcastable to (..., N, M), or undefined
    bool causal = false;  // key j > query i masked
    double drop_p = 0.0;  // the attention dropout (0 when not training)
    // scaled_dot_product_attention (ops/attention.h: tiles, no N x M map) when true; the
    // unfused ops, which materialise the map, when false (the reference the fused path is
    // tested against; variants that keep their map, store_attn, take it).
    bool fused = true;
};

// q (..., N, d), k (..., M, d), v (..., M, dv) -> (..., N, dv). With dropout both paths draw
// the map's mask from the default generator the same way, so they agree element for element.
Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v, const SoftmaxAttention& how);

// The attention dropout of a map of `map_numel` entries for `module` (p when training, else no
// draw), as dropout(map) would draw it: for variants that attend twice with one mask.
AttentionDropout attention_dropout_draw(const Dropout& module, int64_t map_numel, DType dtype);

// timm Attention: qkv = x W_qkv^T + b (B, N, 3 inner) viewed (B, N, 3, nh, Hd) -> q, k, v
// (B, nh, N, Hd); P = softmax(q k^T * Hd^-0.5 + mask); y = proj_drop(proj(attn_drop(P) v)),
// heads concatenated head-major. inner = nh * Hd (Hd = dim / nh unless head_dim is given).
// Parameters: qkv.weight (3 inner, dim), qkv.bias (3 inner, if qkv_bias), proj.weight
// (dim, inner), proj.bias (dim). Time O(B N^2 inner + B N dim inner), memory O(B N inner)
// fused (attend), O(B nh N^2) with fused = false or store_attn.
// Shapes: x (B, N, dim) -> (B, N, dim); the context's key_padding_mask and causal (or the
// module's own `causal`) mask the scores. Throws [MHSA] for a wrong input or mask shape.
class MHSA : public Attention {
  public:
    MHSA(int64_t dim, int64_t num_heads, int64_t head_dim = -1, bool qkv_bias = true,
         double attn_drop = 0.0, double proj_drop = 0.0, bool causal = false);
    using Attention::forward;
    Tensor forward(const Tensor& x, const AttentionContext& context) override;
    std::string extra_repr() const override;

    std::shared_ptr<Linear> qkv, proj;
    std::shared_ptr<Dropout> attn_drop, proj_drop;
    int64_t dim, num_heads, head_dim;
    double scale;
    bool causal;
    // When set, each forward keeps the softmax map P (B, nh, N, N), detached, in last_attn
    // (for attention_rollout, nn/rollout.h); the map is then formed (the unfused path).
    bool store_attn = false;
    Tensor last_attn;
    bool fused = true;  // SoftmaxAttention::fused
};

// Registry factory for "mhsa": dim, num_heads, head_dim, qkv_bias, attn_drop, proj_drop;
// option "causal" (0/1). Throws [mhsa] for an unknown option.
std::shared_ptr<Attention> make_mhsa_attention(const AttentionConfig& config);

// Throws [<who>] naming the first option of `config` that is not in `known`.
void check_attention_options(const AttentionConfig& config, const std::vector<std::string>& known,
                             const std::string& who);

}  // namespace lumen::nn::attention
