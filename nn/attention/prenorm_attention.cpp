// The vit-pytorch attention frame: LayerNorm -> to_qkv -> (variant's mix) -> to_out.
#include "nn/attention/prenorm_attention.h"

#include <algorithm>

#include "nn/activation.h"
#include "nn/container.h"

namespace lumen::nn::attention {

Tensor split_heads(const Tensor& t, int64_t heads) {
    // (B, N, h*d) -> (B, N, h, d) -> (B, h, N, d): both steps are views
    return t.reshape({t.size(0), t.size(1), heads, t.size(2) / heads}).transpose(1, 2);
}

Tensor merge_heads(const Tensor& t) {
    return t.transpose(1, 2).reshape({t.size(0), t.size(2), t.size(1) * t.size(3)});
}

PreNormAttention::PreNormAttention(const char* type_name, int64_t dim_,
                                   const PreNormAttentionOptions& options)
    : Attention(type_name),
      dim(dim_),
      heads(options.heads),
      dim_head(options.dim_head),
      inner_dim(options.heads * options.dim_head) {
    LUMEN_CHECK(dim > 0 && heads > 0 && dim_head > 0, type_name,
                "dim, heads and dim_head must be positive, got dim ", dim, ", heads ", heads,
                ", dim_head ", dim_head);
    LUMEN_CHECK(options.attn_drop >= 0 && options.attn_drop < 1 && options.proj_drop >= 0 &&
                    options.proj_drop < 1,
                type_name, "dropout probabilities must be in [0, 1), got attn_drop ",
                options.attn_drop, ", proj_drop ", options.proj_drop);
    norm = register_module("norm", make<LayerNorm>(Shape{dim}, 1e-5));
    to_qkv = register_module("to_qkv", make<Linear>(dim, 3 * inner_dim, options.qkv_bias));
    if (heads == 1 && dim_head == dim) {
        to_out = register_module("to_out", make<Identity>());
    } else {
        auto out = make<Sequential>();
        out->push_back(make<Linear>(inner_dim, dim));
        out->push_back(make<Dropout>(options.proj_drop));
        to_out = register_module("to_out", out);
    }
}

Tensor PreNormAttention::forward(const Tensor& x, const AttentionContext& context) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == dim && x.size(1) >= 1, type_name(),
                "expects x (B, N, ", dim, ") with N >= 1, got shape ", x.shape());
    LUMEN_CHECK(!context.key_padding_mask.defined() && !context.causal, type_name(),
                "supports neither a key padding mask nor causal attention");
    return to_out->forward(mix(to_qkv->forward(norm->forward(x))));
}

std::string PreNormAttention::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", heads=" + std::to_string(heads) +
           ", dim_head=" + std::to_string(dim_head);
}

PreNormAttentionOptions prenorm_options(const AttentionConfig& config, const char* name,
                                        const std::vector<std::string>& known_options) {
    for (const auto& [key, value] : config.options) {
        bool known =
            std::find(known_options.begin(), known_options.end(), key) != known_options.end();
        LUMEN_CHECK(known, name, "unknown option '", key, "' = ", value);
    }
    PreNormAttentionOptions o;
    o.heads = config.num_heads;
    if (config.head_dim > 0) {
        o.dim_head = config.head_dim;
    } else {
        LUMEN_CHECK(config.num_heads > 0 && config.dim % config.num_heads == 0, name, "dim ",
                    config.dim, " is not divisible by num_heads ", config.num_heads,
                    " (set head_dim)");
        o.dim_head = config.dim / config.num_heads;
    }
    o.qkv_bias = config.qkv_bias;
    o.attn_drop = config.attn_drop;
    o.proj_drop = config.proj_drop;
    return o;
}

}  // namespace lumen::nn::attention
