// Linear attention from matmuls and elementwise ops; autograd gives the backward of PVT-GDLA's
// linear attention 3.1 (dNum = g / den, dDen = -sum_c g y / den, then through the two products and
// phi).
#include "nn/attention/linear_attention.h"

#include "nn/attention/mhsa.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"

namespace lumen::nn::attention {

Tensor elu_feature_map(const Tensor& x) { return add(elu(x, 1.0), 1.0); }

Tensor linear_attention_from_features(const Tensor& phi_q, const Tensor& phi_k, const Tensor& v,
                                      double eps) {
    LUMEN_CHECK(phi_q.ndim() >= 2 && phi_k.ndim() >= 2 && v.ndim() >= 2, "linear_attention",
                "expects q (..., N, dk), k (..., M, dk), v (..., M, dv), got shapes ",
                phi_q.shape(), ", ", phi_k.shape(), ", ", v.shape());
    LUMEN_CHECK(phi_q.size(-1) == phi_k.size(-1) && phi_k.size(-2) == v.size(-2),
                "linear_attention", "q and k need the same feature size and k and v the same ",
                "number of keys, got shapes ", phi_q.shape(), ", ", phi_k.shape(), ", ", v.shape());
    // The dk x dv state and the dk normaliser first: never an N x M matrix.
    Tensor kv = matmul(phi_k.transpose(-2, -1), v);                 // (..., dk, dv)
    Tensor key_sum = sum(phi_k, {-2}, true);                        // (..., 1, dk)
    Tensor numerator = matmul(phi_q, kv);                           // (..., N, dv)
    Tensor denominator = matmul(phi_q, key_sum.transpose(-2, -1));  // (..., N, 1)
    return div(numerator, add(denominator, eps));
}

Tensor linear_attention(const Tensor& q, const Tensor& k, const Tensor& v, double eps) {
    LUMEN_CHECK(q.ndim() >= 2 && k.ndim() >= 2, "linear_attention",
                "expects q (..., N, dk), k (..., M, dk), v (..., M, dv), got shapes ", q.shape(),
                ", ", k.shape(), ", ", v.shape());
    return linear_attention_from_features(elu_feature_map(q), elu_feature_map(k), v, eps);
}

void check_unmasked(const AttentionContext& context, const std::string& who) {
    LUMEN_CHECK(!context.key_padding_mask.defined(), who,
                "takes no key_padding_mask (PVT-GDLA's linear attention is unmasked)");
    LUMEN_CHECK(!context.causal, who, "is non-causal, got causal = true in the context");
}

MultiHeadLinearAttn::MultiHeadLinearAttn(int64_t dim_, int64_t n_heads_, bool qkv_bias, double eps_)
    : Attention("MultiHeadLinearAttn"), dim(dim_), n_heads(n_heads_), eps(eps_) {
    LUMEN_CHECK(dim > 0 && n_heads > 0 && dim % n_heads == 0, "MultiHeadLinearAttn",
                "dim must be a positive multiple of n_heads, got dim ", dim, ", n_heads ", n_heads);
    head_dim = dim / n_heads;
    qkv = register_module("qkv", make<Linear>(dim, 3 * dim, qkv_bias));
    out_proj = register_module("out_proj", make<Linear>(dim, dim, true));
}

Tensor MultiHeadLinearAttn::forward(const Tensor& x, const AttentionContext& context) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == dim, "MultiHeadLinearAttn", "expects x (B, N, ", dim,
                "), got shape ", x.shape());
    check_unmasked(context, "MultiHeadLinearAttn");
    int64_t batch = x.size(0), n = x.size(1);
    Tensor t = qkv->forward(x);  // (B, N, 3C): [q | k | v]
    // phi over the q and k blocks in one op; heads are strided views (row stride 2C or 3C),
    // which the GEMMs read in place.
    Tensor phi = elu_feature_map(t.narrow(-1, 0, 2 * dim))
                     .view({batch, n, 2, n_heads, head_dim})
                     .permute({2, 0, 3, 1, 4});  // (2, B, h, N, dh)
    Tensor v = t.narrow(-1, 2 * dim, dim).view({batch, n, n_heads, head_dim}).transpose(1, 2);
    Tensor y = linear_attention_from_features(phi.select(0, 0), phi.select(0, 1), v, eps);
    return out_proj->forward(y.transpose(1, 2).reshape({batch, n, dim}));
}

std::string MultiHeadLinearAttn::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", n_heads=" + std::to_string(n_heads) +
           ", eps=" + std::to_string(eps);
}

std::shared_ptr<Attention> make_linear_attention(const AttentionConfig& config) {
    check_attention_options(config, {"eps"}, "linear");
    LUMEN_CHECK(config.head_dim < 0 || config.head_dim * config.num_heads == config.dim, "linear",
                "head_dim must be -1 or dim / num_heads, got ", config.head_dim, " for dim ",
                config.dim, " and ", config.num_heads, " heads");
    return make<MultiHeadLinearAttn>(config.dim, config.num_heads, config.qkv_bias,
                                     config.option("eps", 1e-6));
}

}  // namespace lumen::nn::attention
