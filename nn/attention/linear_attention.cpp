// PVT-LinearAttn's mixer on the fused linear attention of ops/linear_attention.h.
#include "nn/attention/linear_attention.h"

#include "nn/attention/mhsa.h"
#include "ops/elementwise.h"

namespace lumen::nn::attention {

Tensor elu_feature_map(const Tensor& x) { return add(elu(x, 1.0), 1.0); }

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
    // Heads are strided views (row stride 3C), which the attention reads in place.
    auto heads = [&](int64_t block) {
        return t.narrow(-1, block * dim, dim).view({batch, n, n_heads, head_dim}).transpose(1, 2);
    };
    Tensor y = fused ? linear_attention(heads(0), heads(1), heads(2), eps)
                     : linear_attention_reference(heads(0), heads(1), heads(2), eps);
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
