// SimA, softmax-free attention with l1-normalised Q and K (Koohpayegani & Pirsiavash 2024;
// official UCDvision/sima sima.py @3ec3b8e; as Khader et al. compare it, Sec. 2.1): the shared
// token mix, and the official attention module (timm names qkv / proj, no pre-norm), registered as
// "sima". The same mix in the vit-pytorch frame of Khader et al. is vitpt_sima_attention.h.
#pragma once

#include <memory>

#include "nn/activation.h"
#include "nn/attention/attention.h"
#include "nn/linear.h"

namespace lumen::nn::attention {

// Which product SimA computes first; the two are equal in exact arithmetic.
enum class SimAOrder {
    by_size,   // (Q K^T) V when N < d, else Q (K^T V): the cheaper one (official rule)
    qk_first,  // (Q K^T) V: an N x N intermediate per head
    kv_first,  // Q (K^T V): a d x d intermediate per head, linear in N
};

// O = mix of already l1-normalised q, k and raw v. Shapes: q, k, v (B, h, N, d) -> (B, h, N, d)
// (any strides with a unit stride in the last two dims). No scale, no softmax.
Tensor sima_mix(const Tensor& q, const Tensor& k, const Tensor& v,
                SimAOrder order = SimAOrder::by_size);

// The whole SimA step on packed projections: qkv (B, N, 3D) with Q, K, V consecutive along the
// features; Q~ = Q / max(sum_n |Q|, eps) per (b, feature) over the tokens (same for K; the
// backward of |.| is sign, 0 at 0, and no gradient flows through a clamped norm); split into
// `heads` heads (feature m*d + j -> head m), sima_mix, merge. Returns (B, N, D). Throws
// [sima] for a qkv whose last dim is not 3 * heads * d.
Tensor sima_qkv_attention(const Tensor& qkv, int64_t heads, double eps = 1e-12,
                          SimAOrder order = SimAOrder::by_size);

// Official SimA attention: y = proj(merge(sima_mix(split(qkv(x))))), eps 1e-12.
// Parameters qkv.weight (3C, C), qkv.bias (3C) if qkv_bias, proj.weight (C, C), proj.bias (C).
// Shapes: x (B, N, C) -> (B, N, C), C divisible by num_heads. attn_drop is accepted for the
// official signature but must be 0 (there are no attention weights). Throws [SimA] for a wrong
// input shape, a key padding mask or causal = true.
class SimA : public Attention {
  public:
    SimA(int64_t dim, int64_t num_heads = 8, bool qkv_bias = false, double attn_drop = 0.0,
         double proj_drop = 0.0);
    using Attention::forward;
    Tensor forward(const Tensor& x, const AttentionContext& context) override;
    std::string extra_repr() const override;

    std::shared_ptr<Linear> qkv, proj;
    std::shared_ptr<Dropout> proj_drop;
    int64_t dim, num_heads;
    SimAOrder order = SimAOrder::by_size;  // tests switch it to compare the two products
};

// Registry factory for "sima" (dim, num_heads, qkv_bias, attn_drop = 0, proj_drop; head_dim
// must be -1 or dim / num_heads).
std::shared_ptr<Attention> make_sima_attention(const AttentionConfig& config);

}  // namespace lumen::nn::attention
