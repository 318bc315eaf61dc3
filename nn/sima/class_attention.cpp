// ClassAttention and ClassAttentionBlock of the official SimA model.
#include "nn/sima/class_attention.h"

#include "nn/attention/prenorm_attention.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/shape.h"

namespace lumen::nn::sima {

int64_t mlp_hidden(int64_t dim, double mlp_ratio, const char* owner) {
    auto hidden = int64_t(double(dim) * mlp_ratio);  // Python's int() truncates
    LUMEN_CHECK(hidden > 0, owner, "mlp hidden size int(", dim, " * ", mlp_ratio,
                ") must be positive");
    return hidden;
}

ClassAttention::ClassAttention(int64_t dim_, int64_t heads, bool qkv_bias, double attn_drop_p,
                               double proj_drop_p)
    : Module("ClassAttention"), dim(dim_), num_heads(heads) {
    LUMEN_CHECK(dim > 0 && num_heads > 0 && dim % num_heads == 0, "ClassAttention",
                "dim must be a positive multiple of num_heads, got dim ", dim, ", num_heads ",
                num_heads);
    qkv = register_module("qkv", make<Linear>(dim, 3 * dim, qkv_bias));
    attn_drop = register_module("attn_drop", make<Dropout>(attn_drop_p));
    proj = register_module("proj", make<Linear>(dim, dim));
    proj_drop = register_module("proj_drop", make<Dropout>(proj_drop_p));
}

Tensor ClassAttention::forward(const Tensor& x) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == dim && x.size(1) >= 1, "ClassAttention",
                "expects x (B, N, ", dim, ") with N >= 1, got shape ", x.shape());
    int64_t tokens = x.size(1);
    Tensor t = qkv->forward(x);
    // Q and K are normalised over all tokens (per feature of (B, N, C), i.e. per head and
    // channel), though only the class token's query row is used afterwards.
    Tensor qk = normalize(t.narrow(2, 0, 2 * dim), 1.0, 1, 1e-6);
    Tensor q0 = sfree::split_heads(qk.narrow(1, 0, 1).narrow(2, 0, dim), num_heads);  // (B,h,1,d)
    Tensor k = sfree::split_heads(qk.narrow(2, dim, dim), num_heads);
    Tensor v = sfree::split_heads(t.narrow(2, 2 * dim, dim), num_heads);
    Tensor a = attn_drop->forward(matmul(q0, k.transpose(-1, -2)));  // (B, h, 1, N)
    Tensor cls = proj_drop->forward(proj->forward(sfree::merge_heads(matmul(a, v))));
    if (tokens == 1) return cls;
    return cat({cls, x.narrow(1, 1, tokens - 1)}, 1);
}

std::string ClassAttention::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", num_heads=" + std::to_string(num_heads);
}

ClassAttentionBlock::ClassAttentionBlock(int64_t dim_, int64_t num_heads, const SimALayerOptions& o)
    : Module("ClassAttentionBlock"), dim(dim_), tokens_norm(o.tokens_norm) {
    norm1 = register_module("norm1", make<LayerNorm>(Shape{dim}, o.norm_eps));
    attn = register_module("attn",
                           make<ClassAttention>(dim, num_heads, o.qkv_bias, o.attn_drop, o.drop));
    norm2 = register_module("norm2", make<LayerNorm>(Shape{dim}, o.norm_eps));
    mlp = register_module("mlp", make<Mlp>(dim, mlp_hidden(dim, o.mlp_ratio, "ClassAttentionBlock"),
                                           -1, "gelu", o.drop));
    if (o.eta) {
        gamma1 = register_parameter("gamma1", full({dim}, *o.eta));
        gamma2 = register_parameter("gamma2", full({dim}, *o.eta));
    }
}

Tensor ClassAttentionBlock::forward(const Tensor& x_in) {
    LUMEN_CHECK(x_in.ndim() == 3 && x_in.size(2) == dim && x_in.size(1) >= 1, "ClassAttentionBlock",
                "expects x (B, N, ", dim, ") with N >= 1, got shape ", x_in.shape());
    int64_t tokens = x_in.size(1);
    Tensor update = attn->forward(norm1->forward(x_in));
    Tensor x = add(x_in, gamma1.defined() ? mul(gamma1, update) : update);
    Tensor patches = x.narrow(1, 1, tokens - 1);
    if (tokens_norm) {
        x = norm2->forward(x);
        patches = x.narrow(1, 1, tokens - 1);
    } else {
        x = cat({norm2->forward(x.narrow(1, 0, 1)), patches}, 1);
    }
    Tensor cls = mlp->forward(x.narrow(1, 0, 1));
    if (gamma2.defined()) cls = mul(gamma2, cls);
    // The official residual adds cat([cls, x[:, 1:]]) to x: the patch tokens are doubled.
    return add(x, cat({cls, patches}, 1));
}

}  // namespace lumen::nn::sima
