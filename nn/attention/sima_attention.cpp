// SimA's token mix and the official SimA attention module.
#include "nn/attention/sima_attention.h"

#include "nn/attention/prenorm_attention.h"
#include "ops/matmul.h"
#include "ops/norm.h"

namespace lumen::nn::attention {

Tensor sima_mix(const Tensor& q, const Tensor& k, const Tensor& v, SimAOrder order) {
    int64_t tokens = q.size(-2), head_dim = q.size(-1);
    if (order == SimAOrder::by_size) {
        order = tokens < head_dim ? SimAOrder::qk_first : SimAOrder::kv_first;
    }
    if (order == SimAOrder::qk_first) return matmul(matmul(q, k.transpose(-1, -2)), v);
    return matmul(q, matmul(k.transpose(-1, -2), v));
}

Tensor sima_qkv_attention(const Tensor& qkv, int64_t heads, double eps, SimAOrder order) {
    LUMEN_CHECK(qkv.ndim() == 3 && heads > 0 && qkv.size(2) % (3 * heads) == 0, "sima",
                "expects qkv (B, N, 3 * heads * d) with ", heads, " heads, got shape ",
                qkv.shape());
    int64_t inner = qkv.size(2) / 3;
    // Normalising over tokens is per feature of (B, N, D), so Q and K are normalised together
    // before the head split, along dim 1; V is used as it is.
    Tensor qk = normalize(qkv.narrow(2, 0, 2 * inner), 1.0, 1, eps);
    Tensor q = split_heads(qk.narrow(2, 0, inner), heads);
    Tensor k = split_heads(qk.narrow(2, inner, inner), heads);
    Tensor v = split_heads(qkv.narrow(2, 2 * inner, inner), heads);
    return merge_heads(sima_mix(q, k, v, order));
}

SimA::SimA(int64_t dim_, int64_t heads, bool qkv_bias, double attn_drop, double proj_drop_p)
    : Attention("SimA"), dim(dim_), num_heads(heads) {
    LUMEN_CHECK(dim > 0 && num_heads > 0 && dim % num_heads == 0, "SimA",
                "dim must be a positive multiple of num_heads, got dim ", dim, ", num_heads ",
                num_heads);
    LUMEN_CHECK(attn_drop == 0.0, "SimA",
                "has no attention weights to drop: attn_drop must be 0, got ", attn_drop);
    qkv = register_module("qkv", make<Linear>(dim, 3 * dim, qkv_bias));
    proj = register_module("proj", make<Linear>(dim, dim));
    proj_drop = register_module("proj_drop", make<Dropout>(proj_drop_p));
}

Tensor SimA::forward(const Tensor& x, const AttentionContext& context) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == dim && x.size(1) >= 1, "SimA", "expects x (B, N, ",
                dim, ") with N >= 1, got shape ", x.shape());
    LUMEN_CHECK(!context.key_padding_mask.defined() && !context.causal, "SimA",
                "supports neither a key padding mask nor causal attention");
    return proj_drop->forward(
        proj->forward(sima_qkv_attention(qkv->forward(x), num_heads, 1e-12, order)));
}

std::string SimA::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", num_heads=" + std::to_string(num_heads);
}

std::shared_ptr<Attention> make_sima_attention(const AttentionConfig& config) {
    LUMEN_CHECK(config.options.empty(), "sima", "takes no options, got '",
                config.options.front().first, "'");
    LUMEN_CHECK(config.head_dim < 0 || config.head_dim * config.num_heads == config.dim, "sima",
                "head_dim must be dim / num_heads, got head_dim ", config.head_dim, " for dim ",
                config.dim, " and ", config.num_heads, " heads");
    return make<SimA>(config.dim, config.num_heads, config.qkv_bias, config.attn_drop,
                      config.proj_drop);
}

}  // namespace lumen::nn::attention
