// MultiHeadSelfAttn and MultiHeadDiffAttn of the PVT-GDLA baselines: projections, RoPE, the softmax
// maps (nn/attention/mhsa.h's masked softmax) and, for Diff, lambda and the sub-layer RMSNorm.
#include "nn/attention/pvt_baselines.h"

#include <cmath>

#include "nn/attention/diff_attn.h"
#include "nn/attention/mhsa.h"
#include "nn/rope.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/reduce.h"

namespace lumen::nn::attention {

namespace {

void check_tokens(const Tensor& x, int64_t dim, const char* who) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == dim, who, "expects x (B, N, ", dim, "), got shape ",
                x.shape());
}

// The channels-per-head check of both registry factories.
void check_head_dim(const AttentionConfig& config, const char* who) {
    LUMEN_CHECK(config.head_dim < 0 || config.head_dim * config.num_heads == config.dim, who,
                "head_dim must be -1 or dim / num_heads, got ", config.head_dim, " for dim ",
                config.dim, " and ", config.num_heads, " heads");
}

}  // namespace

MultiHeadSelfAttn::MultiHeadSelfAttn(int64_t dim_, int64_t n_heads_, bool qkv_bias, bool use_rope_,
                                     double rope_base_)
    : Attention("MultiHeadSelfAttn"),
      dim(dim_),
      n_heads(n_heads_),
      use_rope(use_rope_),
      rope_base(rope_base_) {
    LUMEN_CHECK(dim > 0 && n_heads > 0 && dim % n_heads == 0, "MultiHeadSelfAttn",
                "dim must be a positive multiple of n_heads, got dim ", dim, ", n_heads ", n_heads);
    head_dim = dim / n_heads;
    LUMEN_CHECK(!use_rope || head_dim % 2 == 0, "MultiHeadSelfAttn",
                "RoPE rotates pairs: the head dim ", head_dim, " must be even");
    qkv = register_module("qkv", make<Linear>(dim, 3 * dim, qkv_bias));
    out_proj = register_module("out_proj", make<Linear>(dim, dim, true));
}

Tensor MultiHeadSelfAttn::forward(const Tensor& x, const AttentionContext& context) {
    check_tokens(x, dim, "MultiHeadSelfAttn");
    int64_t batch = x.size(0), n = x.size(1);
    Tensor heads = qkv->forward(x).view({batch, n, 3, n_heads, head_dim});
    Tensor q = heads.select(2, 0), k = heads.select(2, 1);  // (B, N, h, dh)
    if (use_rope) {
        auto [cos, sin] = rope_cos_sin(n, head_dim, rope_base, x.dtype(), x.device());
        q = apply_rope_interleaved(q, cos, sin);
        k = apply_rope_interleaved(k, cos, sin);
    }
    Tensor v = heads.select(2, 2).transpose(1, 2);
    Tensor bias =
        attention_score_bias(context, false, batch, n, x.dtype(), x.device(), "MultiHeadSelfAttn");
    Tensor y =
        attend(q.transpose(1, 2), k.transpose(1, 2), v,
               {1.0 / std::sqrt(double(head_dim)), bias, false, 0.0, fused});  // (B, h, N, dh)
    return out_proj->forward(y.transpose(1, 2).reshape({batch, n, dim}));
}

std::string MultiHeadSelfAttn::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", n_heads=" + std::to_string(n_heads) +
           (use_rope ? ", rope_base=" + std::to_string(rope_base) : "");
}

double pvt_lambda_init(int64_t depth) {
    LUMEN_CHECK(depth >= 0, "MultiHeadDiffAttn", "depth must be >= 0, got ", depth);
    return 0.8 - 0.6 * std::exp(-0.3 * double(depth));
}

MultiHeadDiffAttn::MultiHeadDiffAttn(int64_t dim_, int64_t n_heads_, int64_t depth_, bool qkv_bias,
                                     bool use_rope_, double rope_base_)
    : Attention("MultiHeadDiffAttn"),
      dim(dim_),
      n_heads(n_heads_),
      depth(depth_),
      use_rope(use_rope_),
      rope_base(rope_base_) {
    LUMEN_CHECK(dim > 0 && n_heads > 0 && dim % (2 * n_heads) == 0, "MultiHeadDiffAttn",
                "dim must be a positive multiple of 2 n_heads (even head dim), got dim ", dim,
                ", n_heads ", n_heads);
    head_dim = dim / n_heads;
    LUMEN_CHECK(!use_rope || head_dim % 4 == 0, "MultiHeadDiffAttn",
                "RoPE rotates pairs of a half head: d = head_dim / 2 = ", head_dim / 2,
                " must be even");
    lambda_init = pvt_lambda_init(depth);
    qkv = register_module("qkv", make<Linear>(dim, 3 * dim, qkv_bias));
    lambda_q1 = register_parameter("lambda_q1", diff_lambda_vector(head_dim));
    lambda_k1 = register_parameter("lambda_k1", diff_lambda_vector(head_dim));
    lambda_q2 = register_parameter("lambda_q2", diff_lambda_vector(head_dim));
    lambda_k2 = register_parameter("lambda_k2", diff_lambda_vector(head_dim));
    subln = register_module("subln", make<RMSNorm>(Shape{head_dim}, 1e-5));
    out_proj = register_module("out_proj", make<Linear>(dim, dim, false));
}

Tensor MultiHeadDiffAttn::lambda_full() const {
    return diff_lambda(lambda_q1, lambda_k1, lambda_q2, lambda_k2, lambda_init);
}

Tensor MultiHeadDiffAttn::forward(const Tensor& x, const AttentionContext& context) {
    check_tokens(x, dim, "MultiHeadDiffAttn");
    int64_t batch = x.size(0), n = x.size(1), h = n_heads, d = head_dim / 2;
    Tensor t = qkv->forward(x).view({batch, n, 3, dim});
    // Sub-head 2j + i is half i of head j: q's channels j dh + i d + c view as (2h, d).
    Tensor q = t.select(2, 0).view({batch, n, 2 * h, d});
    Tensor k = t.select(2, 1).view({batch, n, 2 * h, d});
    Tensor v = t.select(2, 2).view({batch, n, h, head_dim}).transpose(1, 2);  // (B, h, N, dh)
    if (use_rope) {
        auto [cos, sin] = rope_cos_sin(n, d, rope_base, x.dtype(), x.device());
        q = apply_rope_interleaved(q, cos, sin);
        k = apply_rope_interleaved(k, cos, sin);
    }
    Tensor bias =
        attention_score_bias(context, false, batch, n, x.dtype(), x.device(), "MultiHeadDiffAttn");
    // A v = A_0 v - lambda (A_1 v), each map's product fused (no N x N map) or, unfused, both
    // maps of a head times its values in one product.
    Tensor first, second;  // (B, h, N, dh)
    if (fused) {
        std::tie(first, second) =
            differential_products(q, k, v, 1.0 / std::sqrt(double(d)), bias, false, {});
    } else {
        Tensor weights = softmax_attention_weights(q.transpose(1, 2), k.transpose(1, 2),
                                                   1.0 / std::sqrt(double(d)), bias)
                             .view({batch, h, 2, n, n});
        Tensor both = matmul(weights, v.unsqueeze(2));  // (B, h, 2, N, dh)
        first = both.select(2, 0), second = both.select(2, 1);
    }
    Tensor mixed = sub(first, mul(second, lambda_full()));
    // RMSNorm_dh(A v) (1 - lambda_init), the constant folded into the norm's weight.
    Tensor normed = rms_norm(mixed, {head_dim}, mul(subln->weight, 1.0 - lambda_init), subln->eps);
    return out_proj->forward(normed.transpose(1, 2).reshape({batch, n, dim}));
}

std::string MultiHeadDiffAttn::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", n_heads=" + std::to_string(n_heads) +
           ", depth=" + std::to_string(depth) + ", lambda_init=" + std::to_string(lambda_init) +
           (use_rope ? ", rope_base=" + std::to_string(rope_base) : "");
}

std::shared_ptr<Attention> make_pvt_sa_attention(const AttentionConfig& config) {
    check_attention_options(config, {"rope", "rope_base"}, "pvt_sa");
    check_head_dim(config, "pvt_sa");
    return make<MultiHeadSelfAttn>(config.dim, config.num_heads, config.qkv_bias,
                                   config.option("rope", 0.0) != 0.0,
                                   config.option("rope_base", 10000.0));
}

std::shared_ptr<Attention> make_pvt_da_attention(const AttentionConfig& config) {
    check_attention_options(config, {"rope", "rope_base", "depth"}, "pvt_da");
    check_head_dim(config, "pvt_da");
    int64_t depth = int64_t(config.option("depth", double(config.layer_index)));
    return make<MultiHeadDiffAttn>(config.dim, config.num_heads, depth, config.qkv_bias,
                                   config.option("rope", 0.0) != 0.0,
                                   config.option("rope_base", 10000.0));
}

}  // namespace lumen::nn::attention
